"""The observation socket: `/api/v1/observations`, subprotocol `maia.node.observations.v1`.

The Node's upgrade gate (token, Origin, Host, connection limit) runs before anything here.
The client proposes the subprotocol (a connection without it is refused with HTTP 400) and,
like every connection, starts with `node.hello` (`{id, method: "node.hello", params}`),
answered as on `/api/v1`; the hello's protocol version and registry digest are bound to the
connection (`Greeting`). A request before it answers `hello_required` (so an old client that
skips it learns why), a failed hello answers its error; either way the client may still say
hello within `FIRST_FRAME_TIMEOUT_S`. Then one subscribe request in the same envelope:
`{id, method: "observe.events" | "session.attach", params}`, both registered operations.
The Node answers with the stream's frames under that id; the stream ends with a terminal
frame (`gap`, `resync`) or an error, and the Node closes the connection. One subscription
per connection: later requests are answered with `invalid_request`.

A frame the client does not take within `SEND_TIMEOUT_S` (a consumer that stopped reading
and whose TCP buffers are full) ends the connection without a last frame; the client
resumes with the cursor of the last frame it read.
"""

from __future__ import annotations

import contextlib
import json
from typing import Any, Final

import attrs
import trio
from trio_websocket import ConnectionClosed, WebSocketConnection, WebSocketRequest

from maia.protocol import (
    REGISTRY,
    MaiaError,
    NodeHelloInput,
    SessionAttachInput,
    answer_hello,
    decode_input,
    encode_output,
    take_request_id,
)
from worker_bridge import STRICT_DECODER

from ._attach import AttachStream
from ._frames import error_frame, result_frame
from ._hub import ObservationHub
from ._observe import ObservationStream
from ._untrusted import refuse_lone_surrogates, repeated_key

OBSERVATIONS_PATH: Final = "/api/v1/observations"
SUBPROTOCOL: Final = "maia.node.observations.v1"
HEARTBEAT_S: Final = 5.0
SEND_TIMEOUT_S: Final = 30.0
FIRST_FRAME_TIMEOUT_S: Final = 10.0
MAX_REQUEST_BYTES: Final = 64 * 1024
HELLO: Final = "node.hello"
METHODS: Final = ("observe.events", "session.attach")
MAX_HELLO_ATTEMPTS: Final = 8  # frames answered before a good hello; then the Node closes


@attrs.frozen
class Greeting:
    """What the connection's hello said: its protocol, registry digest and whether it matched."""

    protocol: str
    registry_digest: str | None
    registry_match: bool


def _invalid(detail: str, request_id: Any = None, path: str | None = None) -> MaiaError:
    """`path`: the envelope field at fault ("id", "method", an unknown key), when one is."""
    details: dict[str, Any] = {"id": request_id}
    if path is not None:
        details["path"] = path
    return MaiaError("invalid_request", f"the request is malformed: {detail}", details)


_DECODER = STRICT_DECODER


def parse_subscribe(message: str | bytes) -> tuple[Any, str, Any]:
    """(request id, method, checked params) of a subscribe request.

    Raises `MaiaError`: frame_too_large, invalid_request (not an envelope, unknown method),
    validation_failed (naming the field).
    """
    if len(message) > MAX_REQUEST_BYTES:
        raise MaiaError(
            "frame_too_large",
            f"a subscribe request exceeds {MAX_REQUEST_BYTES} bytes",
            {"limit": MAX_REQUEST_BYTES},
        )
    try:
        text = message.decode("utf-8") if isinstance(message, bytes) else message
        value = _DECODER.decode(text)
    except (ValueError, RecursionError, UnicodeDecodeError) as error:
        found = None if isinstance(error, UnicodeDecodeError) else repeated_key(text)
        if found is not None:
            raise _invalid(f"duplicate key {found[0]}", found[1], found[0]) from None
        raise _invalid(f"invalid JSON: {error}") from None
    if not isinstance(value, dict):
        raise _invalid("the frame must be a JSON object {id, method, params}")
    request_id = value.get("id")
    if isinstance(request_id, bool) or not (
        (isinstance(request_id, str) and 0 < len(request_id) <= 128)
        or (isinstance(request_id, int) and 0 <= request_id <= 2**53 - 1)
    ):
        raise _invalid(
            "id must be a string of 1-128 characters or a non-negative integer", path="id"
        )
    refuse_lone_surrogates(text, value, request_id)
    unknown = sorted(set(value) - {"id", "method", "params"})
    if unknown:
        raise _invalid(f"unknown envelope field {unknown[0]!r}", request_id, unknown[0])
    method = value.get("method")
    if method not in (HELLO, *METHODS):
        raise MaiaError(
            "unknown_method",
            f"the observation socket serves {HELLO}, then {' or '.join(METHODS)}, not {method!r}",
            {"method": str(method)[:128], "id": request_id},
        )
    params = value.get("params", {})
    try:
        descriptor = REGISTRY.get(method)
        assert descriptor is not None  # all three are registered ops
        checked: Any = decode_input(descriptor, params)
    except MaiaError as error:
        raise MaiaError(error.code, error.message, {**error.details, "id": request_id}) from None
    return request_id, method, checked


async def accept_observations(request: WebSocketRequest) -> WebSocketConnection | None:
    """Accept the upgrade with our subprotocol, or refuse it (HTTP 400) and return None."""
    if SUBPROTOCOL not in request.proposed_subprotocols:
        error = MaiaError(
            "invalid_request",
            f"the request is malformed: the observation socket needs the WebSocket "
            f"subprotocol {SUBPROTOCOL}",
            {"header": "Sec-WebSocket-Protocol"},
        )
        body = json.dumps({"ok": False, "error": error.to_wire()}).encode()
        await request.reject(400, extra_headers=[(b"Content-Type", b"application/json")], body=body)
        return None
    return await request.accept(subprotocol=SUBPROTOCOL)


class _Stuck(Exception):
    """The client took no frame within the send timeout."""


async def serve_observation_connection(
    socket: WebSocketConnection,
    hub: ObservationHub,
    *,
    heartbeat_s: float | None = None,
    send_timeout_s: float | None = None,
) -> None:
    """Serve one accepted connection until its stream ends or the client leaves (heartbeat
    interval and send timeout: the hub's unless given)."""
    heartbeat_s = hub.heartbeat_s if heartbeat_s is None else heartbeat_s
    send_timeout = hub.send_timeout_s if send_timeout_s is None else send_timeout_s

    async def send(text: str) -> None:
        with trio.move_on_after(send_timeout) as scope:
            await socket.send_message(text)
        if scope.cancelled_caught:
            raise _Stuck

    try:
        if await _greet(socket, send, hub) is None:
            return
        message: str | bytes | None = None
        with trio.move_on_after(FIRST_FRAME_TIMEOUT_S):
            message = await socket.get_message()
        if message is None:
            await send(error_frame(None, _invalid("no subscribe request within 10 s")))
            return
        try:
            request_id, method, params = parse_subscribe(message)
            if method == HELLO:
                raise _invalid("node.hello was already answered on this connection", request_id)
        except MaiaError as error:
            await send(error_frame(take_request_id(error), error))
            return
        stream: AttachStream | ObservationStream
        peer = _peer(socket)
        if method == "session.attach":
            assert isinstance(params, SessionAttachInput)
            stream = AttachStream(hub, request_id, params, send, heartbeat_s=heartbeat_s,
                                  peer=peer)  # fmt: skip
        else:
            stream = ObservationStream(hub, request_id, params, send, heartbeat_s=heartbeat_s,
                                       peer=peer)  # fmt: skip
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_refuse_more, socket, send, nursery.cancel_scope)
            try:
                await stream.run()
            except MaiaError as error:
                with contextlib.suppress(ConnectionClosed, _Stuck):
                    await send(error_frame(request_id, error))
            except (ConnectionClosed, _Stuck):
                pass
            finally:
                nursery.cancel_scope.cancel()
    except (ConnectionClosed, _Stuck):
        return
    finally:
        with trio.move_on_after(2) as closing:
            closing.shield = True
            await socket.aclose()


def _peer(socket: WebSocketConnection) -> str:
    """The connection's remote address as `host:port` (`[v6]:port`), "" when unknown."""
    try:
        remote = socket.remote
    except OSError:  # the peer already left (getpeername: not connected)
        return ""
    if isinstance(remote, str):
        return remote  # not a TCP stream: trio-websocket's own description
    host = f"[{remote.address}]" if ":" in str(remote.address) else str(remote.address)
    return f"{host}:{remote.port}"


async def _greet(socket: WebSocketConnection, send: Any, hub: ObservationHub) -> Greeting | None:
    """Answer frames until a good `node.hello` (its Greeting), or None: no hello within
    `FIRST_FRAME_TIMEOUT_S` or `MAX_HELLO_ATTEMPTS` frames (the caller closes)."""
    descriptor = REGISTRY.get(HELLO)
    assert descriptor is not None
    why = f"no successful {HELLO} within {FIRST_FRAME_TIMEOUT_S:g} s"
    with trio.move_on_after(FIRST_FRAME_TIMEOUT_S):
        for _ in range(MAX_HELLO_ATTEMPTS):
            message = await socket.get_message()
            request_id: Any = None
            try:
                request_id, method, params = parse_subscribe(message)
                if method != HELLO:
                    raise MaiaError(
                        "hello_required",
                        f"the first request must be {HELLO} (then {method})",
                        {"method": method, "id": request_id},
                    )
                assert isinstance(params, NodeHelloInput)
                result = answer_hello(
                    params, node_id=hub.node_id, epoch=hub.epoch, registry_digest=REGISTRY.digest
                )
            except MaiaError as error:
                await send(error_frame(take_request_id(error, request_id), error))
                continue
            await send(result_frame(request_id, encode_output(descriptor, result)))
            return Greeting(params.protocol, params.registry_digest, result.registry_match)
        why = f"no successful {HELLO} in {MAX_HELLO_ATTEMPTS} frames"  # before the 10 s
    await send(error_frame(None, MaiaError("hello_required", why, {})))
    return None


async def _refuse_more(socket: WebSocketConnection, send: Any, scope: trio.CancelScope) -> None:
    """Answer any further request with invalid_request; end the stream when the peer leaves."""
    try:
        while True:
            message = await socket.get_message()
            try:
                request_id, _, _ = parse_subscribe(message)
            except MaiaError as error:
                request_id = take_request_id(error)
            await send(error_frame(request_id, _invalid("one subscription per connection")))
    except (ConnectionClosed, _Stuck):
        scope.cancel()
