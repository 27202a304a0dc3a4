"""The SDK's connection to a Node: hello, concurrent requests matched by id, reconnect.

`open_client()` finds the Node (explicit URL, `MAIA_NODE`, or the discovery file of the
home), connects with the bearer token, sends `node.hello` with this SDK's protocol version
and registry digest, and yields a `MaiaClient`. One reader task per connection hands each
answer to the request waiting for its id, so many requests may be in flight at once.
Everything runs on anyio: the same client works in trio programs and under asyncio.

A lost connection fails every pending request with `unavailable` (retryable); the client
does not reconnect behind the caller's back: `await client.reconnect()` does, on request.
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import orjson
from wsproto.utilities import LocalProtocolError, RemoteProtocolError

from maia.protocol import MaiaError

from ._locate import Endpoint, locate_node
from ._projection import (
    OPERATION_TREE,
    Namespace,
    decode_result,
    descriptor_of,
    encode_params,
    hello_params,
    registry_mismatch,
)
from ._transport import (
    CUT_REASON,
    MAX_MESSAGE_BYTES,
    WebSocket,
    error_from_wire,
    open_websocket,
)

DEFAULT_TIMEOUT_S = 10.0  # above the Node's own 5 s deadline, so its answer arrives first


MAX_DEPRECATIONS = 16
_HELLO = "node.hello"


class _Slot:
    __slots__ = ("done", "error", "result")

    def __init__(self, done: Any) -> None:
        self.done = done  # an anyio.Event, or under trio trio's own (`_Waits`)
        self.result: Any = None
        self.error: MaiaError | None = None


class _Waits:
    """How a request waits for its answer: anyio's Event and cancel scope, or under trio
    trio's own (the same semantics without anyio's wrapper objects: a few microseconds a
    request)."""

    def __init__(self, under_trio: bool) -> None:
        trio = sys.modules.get("trio") if under_trio else None
        self._trio = trio

    def event(self) -> Any:
        return anyio.Event() if self._trio is None else self._trio.Event()

    def within(self, seconds: float) -> Any:
        """A scope that stops waiting after `seconds` (`cancelled_caught` then)."""
        if self._trio is None:
            return anyio.move_on_after(seconds)
        return self._trio.CancelScope(deadline=self._trio.current_time() + seconds)


class MaiaClient:
    """A connected SDK client. Build it with `open_client`."""

    def __init__(
        self,
        endpoint: Endpoint,
        group: anyio.abc.TaskGroup,
        *,
        timeout_s: float,
        require_registry_match: bool = True,
        hello: Mapping[str, Any] | None = None,
    ) -> None:
        self._require_registry_match = require_registry_match
        self._hello_options = dict(hello or {})  # every (re)connection's hello says them
        self.endpoint = endpoint
        self._group = group
        self._timeout_s = timeout_s
        self._ids = itertools.count(1)
        self._pending: dict[int, _Slot] = {}
        self._socket: WebSocket | None = None
        self._lost_socket: WebSocket | None = None  # the connection last lost, for its reason
        self._waits = _Waits(False)
        self._reader_scope: anyio.CancelScope | None = None
        self.hello: dict[str, Any] = {}
        # The deprecation diagnostics the Node sent (a deprecated name was called), newest last.
        self.deprecations: list[dict[str, Any]] = []

    async def request(self, method: str, params: dict[str, Any] | None = None) -> Any:
        """Send one request and return its JSON result.

        Raises `MaiaError`: the Node's typed error, `frame_too_large` for a request over
        1 MiB (nothing is sent), `unavailable` when the connection is lost, or
        `deadline_exceeded` when no answer comes within the client's timeout.
        """
        socket = self._socket
        if socket is None:
            if self._lost_socket is not None and self._lost_socket.cut:
                raise _lost(self._lost_socket)  # why the last connection ended
            raise MaiaError("unavailable", "node is unavailable: not connected", {"target": "node"})
        request_id = next(self._ids)
        frame = orjson.dumps({"id": request_id, "method": method, "params": params or {}})
        if len(frame) > MAX_MESSAGE_BYTES:
            raise MaiaError(
                "frame_too_large",
                f"a frame exceeds {MAX_MESSAGE_BYTES} bytes",
                {"limit": MAX_MESSAGE_BYTES, "method": method},
            )
        waits = self._waits
        slot = _Slot(waits.event())
        self._pending[request_id] = slot
        try:
            try:
                await socket.send(frame)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError) as error:
                raise _lost(socket) from error
            with waits.within(self._timeout_s):
                await slot.done.wait()
        finally:
            self._pending.pop(request_id, None)
        if not slot.done.is_set():
            ms = int(self._timeout_s * 1000)
            raise MaiaError(
                "deadline_exceeded",
                f"{method} did not finish within {ms} ms",
                {"method": method, "ms": ms},
            )
        if slot.error is not None:
            raise slot.error
        return slot.result

    async def call(self, op_id: str, params: Any = None, /, **fields: Any) -> Any:
        """Call `op_id` with an input instance, a wire dict, or keyword fields; return the
        op's typed output.

        `node.hello` is not sent again (a connection says hello once): with no params it
        answers the hello this connection got (`client.hello`, decoded); with valid params
        it is refused `invalid_request` here, naming `hello=`, the option that says them.

        Raises `MaiaError`: unknown_method or validation_failed locally (nothing sent), or
        what `request` raises.
        """
        descriptor = descriptor_of(op_id)
        if op_id == _HELLO and self.hello and params is None and not fields:
            return decode_result(descriptor, self.hello)
        wire = encode_params(descriptor, params, fields)
        if op_id == _HELLO and self.hello:
            raise self._hello_again()
        return decode_result(descriptor, await self.request(op_id, wire))

    @staticmethod
    def _hello_again() -> MaiaError:
        return MaiaError(
            "invalid_request",
            "node.hello: this connection said its hello when it opened (client.hello is the "
            "answer); to say other hello fields open a connection with "
            "open_client(hello={...}) or connect_sync(hello={...})",
            {"method": _HELLO, "option": "hello"},
        )

    def __getattr__(self, name: str) -> Namespace:
        node = OPERATION_TREE.get(name)
        if node is None or name.startswith("_"):
            raise AttributeError(name)
        return Namespace(self, node, name)

    def __dir__(self) -> list[str]:
        return [*super().__dir__(), *OPERATION_TREE]

    async def reconnect(self) -> None:
        """Drop the current connection (failing its pending requests) and connect again.

        Raises `MaiaError` as `open_client` does.
        """
        await self._disconnect()
        await self._connect()

    async def aclose(self) -> None:
        await self._disconnect()

    async def _connect(self) -> None:
        endpoint = self.endpoint.refreshed()
        self.endpoint = endpoint
        headers = [(b"authorization", f"Bearer {endpoint.token}".encode("ascii"))]
        socket = await open_websocket(endpoint.url, headers=headers, timeout_s=self._timeout_s)
        self._socket, self._lost_socket = socket, None
        self._waits = _Waits(socket.under_trio)
        self._reader_scope = anyio.CancelScope()
        self._group.start_soon(self._read, socket, self._reader_scope)
        sent = hello_params(self._hello_options)
        hello = await self.request("node.hello", sent)
        if self._require_registry_match and not hello.get("registryMatch", False):
            raise registry_mismatch(sent, hello)
        self.hello = hello

    async def _disconnect(self) -> None:
        socket, self._socket = self._socket, None
        if self._reader_scope is not None:
            self._reader_scope.cancel()
        if socket is not None:
            await socket.aclose()
            self._fail_pending(socket)

    async def _read(self, socket: WebSocket, scope: anyio.CancelScope) -> None:
        with scope:
            try:
                while True:
                    message = await socket.receive()
                    if message is None:
                        break
                    self._deliver(message)
            except (LocalProtocolError, RemoteProtocolError, OSError):
                # The peer broke the WebSocket protocol or the socket failed: the
                # connection is lost, which the pending calls learn below. The reader
                # never raises, so the caller's task group never sees its failure.
                socket.close_code = socket.close_code or 1006
        if self._socket is socket:
            self._socket, self._lost_socket = None, socket
        self._fail_pending(socket)
        await socket.aclose()  # idempotent: closing twice is harmless

    def _deliver(self, message: str | bytes) -> None:
        try:
            frame = orjson.loads(message)
            slot = self._pending.get(frame["id"])
        except (orjson.JSONDecodeError, KeyError, TypeError):
            return  # not an answer to anything we asked: ignore it rather than guess
        if slot is None:
            return
        if frame.get("ok") is True:
            slot.result = frame.get("result")
            deprecations = frame.get("deprecations")
            if isinstance(deprecations, list) and deprecations:  # a deprecated name answered
                self.deprecations = [*self.deprecations, *deprecations][-MAX_DEPRECATIONS:]
        else:
            slot.error = error_from_wire(frame.get("error"))
        slot.done.set()

    def _fail_pending(self, socket: WebSocket) -> None:
        for slot in self._pending.values():
            if not slot.done.is_set():
                slot.error = _lost(socket)
                slot.done.set()


def _lost(socket: WebSocket) -> MaiaError:
    if socket.close_code == 1009:
        return MaiaError(
            "frame_too_large",
            f"a frame exceeds {MAX_MESSAGE_BYTES} bytes (the connection was closed)",
            {"limit": MAX_MESSAGE_BYTES, "closeCode": 1009},
        )
    if socket.cut:
        return MaiaError(
            "unavailable",
            f"node is unavailable: {CUT_REASON} (reconnect to go on)",
            {"target": "node", "closeCode": socket.close_code},
        )
    return MaiaError(
        "unavailable",
        "node is unavailable: the connection was lost",
        {"target": "node", "closeCode": socket.close_code},
    )


@asynccontextmanager
async def open_client(
    url: str | None = None,
    *,
    token: str | None = None,
    home: str | Path | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    require_registry_match: bool = True,
    hello: Mapping[str, Any] | None = None,
) -> AsyncIterator[MaiaClient]:
    """Connect to a Node and perform the hello (its answer: `client.hello`).

    The Node is `url` if given, else `$MAIA_NODE`, else the live Node in the discovery file
    of `home` (default `$MAIA_HOME` or `~/.maia`). `hello` (wire names: `protocol`,
    `registryDigest`, `clientName`, `clientVersion`; None drops one) goes over this SDK's
    own hello params: a connection says hello once, and a second `node.hello` on it is
    refused `invalid_request` (`client.node.hello()` answers the connection's own hello).
    Raises `MaiaError`: unavailable (no Node, stale discovery, refused TCP),
    unauthenticated (token), protocol_incompatible (another protocol version, or, unless
    `require_registry_match=False`, another registry digest), or the hello's own refusal
    (`validation_failed` naming the field).
    """
    endpoint = locate_node(url, token=token, home=Path(home) if home is not None else None)
    try:
        async with anyio.create_task_group() as group:
            client = MaiaClient(endpoint, group, timeout_s=timeout_s,
                                require_registry_match=require_registry_match,
                                hello=hello)  # fmt: skip
            try:
                await client._connect()
                yield client
            finally:
                await client.aclose()
                group.cancel_scope.cancel()
    except BaseExceptionGroup as group_error:
        # The reader task never raises, so a group holds the caller's own exception: give it
        # back unwrapped, as if no task group were there.
        if len(group_error.exceptions) == 1:
            raise group_error.exceptions[0] from None
        raise
