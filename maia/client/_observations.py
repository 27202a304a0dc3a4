"""Streams you can follow from the SDK: `observe_events` and `attach_session`.

Both open `/api/v1/observations` (subprotocol `maia.node.observations.v1`), say `node.hello`
(this SDK's protocol and registry digest, as `open_client` does; another registry is
`protocol_incompatible` unless `require_registry_match=False`), send one subscribe request
and yield the Node's frames as `StreamFrame`s. Each keeps the cursor of the
last frame it yielded; when the connection drops, or the Node ends the stream with `gap`
(observations) or `resync` (attach), the feed reconnects by itself and resumes from that
cursor, so a consumer sees each durable record once, in order. A `reset` frame (the cursor
expired or was pruned) is yielded: a fresh snapshot follows it. Errors that resuming cannot
cure (`invalid_cursor`, `resource_not_found`, `validation_failed`) are raised.

    async with observe_events(client.endpoint, {"sessionIds": [sid]}) as feed:
        async for frame in feed:
            for record in frame.records: ...
"""

from __future__ import annotations

import itertools
from typing import Any, Final, Self

import anyio
import attrs
import orjson
from wsproto import ConnectionType, WSConnection
from wsproto.events import Request
from wsproto.utilities import LocalProtocolError, RemoteProtocolError

from maia.core import MaiaError

from ._locate import Endpoint
from ._projection import hello_params, registry_mismatch
from ._transport import WebSocket, _await_accept, error_from_wire, split_url

OBSERVATIONS_PATH: Final = "/api/v1/observations"
SUBPROTOCOL: Final = "maia.node.observations.v1"
_RESUMABLE: Final = frozenset({"unavailable", "overloaded", "cursor_reset_required"})
_TIMEOUT_S: Final = 10.0


@attrs.frozen
class StreamFrame:
    """One frame of a stream: its type, its records (possibly none) and the whole frame."""

    type: str
    records: tuple[dict[str, Any], ...]
    frame: dict[str, Any] = attrs.field(repr=False)


def observations_url(url: str) -> str:
    """The observation socket's URL on the Node of an `/api/v1` URL."""
    host, port, _ = split_url(url)
    return f"ws://{host}:{port}{OBSERVATIONS_PATH}"


async def open_observation_socket(endpoint: Endpoint, timeout_s: float = _TIMEOUT_S) -> WebSocket:
    """Connect to the observation socket with the bearer token and the subprotocol.

    Raises `MaiaError`: unavailable, or the Node's typed refusal of the upgrade.
    """
    url = observations_url(endpoint.url)
    host, port, path = split_url(url)
    try:
        with anyio.fail_after(timeout_s):
            stream = await anyio.connect_tcp(host.strip("[]"), port)
    except (OSError, TimeoutError) as error:
        raise MaiaError(
            "unavailable", f"node at {url} is unavailable: {error}", {"target": "node", "url": url}
        ) from error
    ws = WSConnection(ConnectionType.CLIENT)
    headers = [(b"authorization", f"Bearer {endpoint.token}".encode("ascii"))]
    try:
        with anyio.fail_after(timeout_s):
            await stream.send(
                ws.send(
                    Request(
                        host=f"{host}:{port}",
                        target=path,
                        extra_headers=headers,
                        subprotocols=[SUBPROTOCOL],
                    )
                )
            )
            return await _await_accept(stream, ws, url)
    except BaseException as error:
        await anyio.aclose_forcefully(stream)
        if isinstance(error, TimeoutError):
            raise MaiaError(
                "unavailable", f"node at {url} did not answer the upgrade", {"url": url}
            ) from error
        raise


async def say_hello(socket: WebSocket, *, require_registry_match: bool = True,
                    timeout_s: float = _TIMEOUT_S) -> dict[str, Any]:  # fmt: skip
    """Send `node.hello` on an open observation socket and return its result.

    Raises `MaiaError`: the Node's refusal (`protocol_incompatible`, ...), `unavailable`
    when no answer comes within `timeout_s`, `protocol_incompatible` for another registry
    digest unless `require_registry_match=False`."""

    sent = hello_params()
    hello_request = {"id": 0, "method": "node.hello", "params": sent}
    await socket.send(orjson.dumps(hello_request).decode())
    with anyio.move_on_after(timeout_s):
        message = await socket.receive()
        if message is None:
            raise MaiaError("unavailable", "the Node closed the stream during node.hello", {})
        try:
            envelope = orjson.loads(message)
        except orjson.JSONDecodeError:
            envelope = None
        if not isinstance(envelope, dict):
            raise MaiaError("unavailable", "the Node's answer to node.hello is not JSON", {})
        if envelope.get("ok") is not True:
            raise error_from_wire(envelope.get("error"))
        hello: dict[str, Any] = envelope.get("result", {})
        if require_registry_match and hello.get("registryMatch") is not True:
            raise registry_mismatch(sent, hello)
        return hello
    raise MaiaError("unavailable", f"no answer to node.hello within {timeout_s:g} s", {})


def _endpoint_of(target: Any) -> Endpoint:
    endpoint = getattr(target, "endpoint", target)  # a MaiaClient or an Endpoint
    if not isinstance(endpoint, Endpoint):
        raise TypeError("pass a MaiaClient or an Endpoint")
    return endpoint


class _Feed:
    """Shared reconnecting machinery; subclasses say what to send and how cursors move."""

    method: str = ""

    def __init__(self, target: Any, *, heartbeats: bool, max_retries: int,
                 require_registry_match: bool = True) -> None:  # fmt: skip
        self._endpoint = _endpoint_of(target)
        self._require_registry_match = require_registry_match
        self.hello: dict[str, Any] = {}  # the last connection's node.hello result
        self._heartbeats = heartbeats
        self._max_retries = max_retries
        self._socket: WebSocket | None = None
        self._ids = itertools.count(1)
        self._failures = 0
        self.reconnects = 0
        self.gaps: list[dict[str, Any]] = []  # the gap/resync frames that made it reconnect

    def _params(self) -> dict[str, Any]:
        raise NotImplementedError

    def _advance(self, frame: dict[str, Any]) -> None:
        raise NotImplementedError

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        socket, self._socket = self._socket, None
        if socket is not None:
            await socket.aclose()

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> StreamFrame:
        """The next frame; reconnects and resumes as needed (never ends by itself)."""
        return await self._next()

    async def _connect(self) -> WebSocket:
        self._endpoint = self._endpoint.refreshed()
        socket = await open_observation_socket(self._endpoint)
        try:
            self.hello = await say_hello(
                socket, require_registry_match=self._require_registry_match
            )
            request = {"id": next(self._ids), "method": self.method, "params": self._params()}
            await socket.send(orjson.dumps(request).decode())
        except BaseException:
            await socket.aclose()
            raise
        return socket

    async def _backoff(self, error: MaiaError) -> None:
        self._failures += 1
        if self._failures > self._max_retries:
            raise error
        await anyio.sleep(min(2.0, 0.05 * 2**self._failures))

    async def _next(self) -> StreamFrame:
        while True:
            if self._socket is None:
                try:
                    self._socket = await self._connect()
                except MaiaError as error:
                    if error.code not in _RESUMABLE:
                        raise
                    await self._backoff(error)
                    continue
            try:
                message = await self._socket.receive()
            except (LocalProtocolError, RemoteProtocolError, OSError):
                message = None
            if message is None:  # dropped: resume from the last cursor
                await self._drop()
                await self._backoff(MaiaError("unavailable", "the stream was lost", {}))
                continue
            try:
                envelope = orjson.loads(message)
            except orjson.JSONDecodeError:
                continue  # not a frame: ignore rather than guess
            if envelope.get("ok") is not True:
                failure = error_from_wire(envelope.get("error"))
                await self._drop()
                if failure.code not in _RESUMABLE:
                    raise failure
                await self._backoff(failure)
                continue
            frame = envelope.get("result", {}).get("frame", {})
            kind = str(frame.get("type"))
            self._failures = 0
            if kind in ("gap", "resync"):
                self.gaps.append(frame)
                self._advance(frame)
                await self._drop()
                continue
            self._advance(frame)
            if kind == "heartbeat" and not self._heartbeats:
                continue
            return StreamFrame(kind, tuple(frame.get("records", ())), frame)

    async def _drop(self) -> None:
        socket, self._socket = self._socket, None
        if socket is not None:
            await socket.aclose()
        self.reconnects += 1


class ObservationFeed(_Feed):
    """The observation stream as an async iterator (see `observe_events`)."""

    method = "observe.events"

    def __init__(self, target: Any, query: dict[str, Any] | None, cursor: str | None,
                 *, heartbeats: bool, max_retries: int,
                 require_registry_match: bool = True) -> None:  # fmt: skip
        super().__init__(target, heartbeats=heartbeats, max_retries=max_retries,
                         require_registry_match=require_registry_match)  # fmt: skip
        self.query = dict(query or {})
        self.cursor = cursor

    def _params(self) -> dict[str, Any]:
        params: dict[str, Any] = {"query": self.query}
        if self.cursor is not None:
            params["cursor"] = self.cursor
        return params

    def _advance(self, frame: dict[str, Any]) -> None:
        cursor = frame.get("cursor")
        if isinstance(cursor, str):
            self.cursor = cursor


class SessionFeed(_Feed):
    """A Session's attach stream as an async iterator (see `attach_session`)."""

    method = "session.attach"

    def __init__(self, target: Any, session_id: str, cursor: dict[str, int] | None,
                 *, heartbeats: bool, max_retries: int,
                 require_registry_match: bool = True) -> None:  # fmt: skip
        super().__init__(target, heartbeats=heartbeats, max_retries=max_retries,
                         require_registry_match=require_registry_match)  # fmt: skip
        self.session_id = session_id
        self.cursor = dict(cursor) if cursor is not None else None
        self._resync_without_progress = 0

    def _params(self) -> dict[str, Any]:
        params: dict[str, Any] = {"sessionId": self.session_id}
        if self.cursor is not None:
            params["cursor"] = self.cursor
        return params

    def _advance(self, frame: dict[str, Any]) -> None:
        kind = frame.get("type")
        if kind == "resync":
            # A second resync in a row without progress: the cursor itself cannot be served
            # (pruned); start again from a snapshot.
            self._resync_without_progress += 1
            if self._resync_without_progress >= 2:
                self.cursor = None
            return
        position = frame.get("position")
        if isinstance(position, dict):
            self._move(position.get("epoch"), position.get("sequence"))
        for record in frame.get("records", ()):
            self._move(record.get("nodeEpoch"), record.get("sequence"))
        if kind in ("records", "synchronized"):
            self._resync_without_progress = 0

    def _move(self, epoch: Any, sequence: Any) -> None:
        if not isinstance(epoch, int) or not isinstance(sequence, int):
            return
        current = self.cursor
        if current is None or (epoch, sequence) >= (current["epoch"], current["sequence"]):
            self.cursor = {"epoch": epoch, "sequence": sequence}


def observe_events(
    target: Any,
    query: dict[str, Any] | None = None,
    *,
    cursor: str | None = None,
    heartbeats: bool = False,
    max_retries: int = 8,
    require_registry_match: bool = True,
) -> ObservationFeed:
    """Follow the observation stream of the Node `target` (a MaiaClient or an Endpoint).

    `query` is an ObservationQueryV1 in wire form (`domains`, `importance`, `projectIds`,
    `sessionIds`, `eventTypes`, `classifications`, `includeContent`, `limit`). Iterating
    raises `MaiaError` for what resuming cannot cure, or `unavailable` after `max_retries`
    failed reconnects in a row.
    """
    return ObservationFeed(target, query, cursor, heartbeats=heartbeats, max_retries=max_retries,
                           require_registry_match=require_registry_match)  # fmt: skip


def attach_session(
    target: Any,
    session_id: str,
    *,
    cursor: dict[str, int] | None = None,
    heartbeats: bool = False,
    max_retries: int = 8,
    require_registry_match: bool = True,
) -> SessionFeed:
    """Follow one Session's turns and items (`session.attach`) on the Node `target`.

    Yields `attached`, `records`, `synchronized` (and `heartbeat` if asked) frames; after a
    reconnect it resumes from `feed.cursor` ({epoch, sequence}). Raises as `observe_events`.
    """
    return SessionFeed(target, session_id, cursor, heartbeats=heartbeats, max_retries=max_retries,
                       require_registry_match=require_registry_match)  # fmt: skip
