"""A WebSocket client connection on anyio + wsproto: runs under trio and under asyncio.

wsproto is sans-IO (bytes in, events out); this module is the thin loop that moves bytes
between it and an anyio TCP stream. Messages are reassembled under a size bound; a peer
that sends more is closed with 1009. A refused upgrade becomes a `MaiaError` carrying the
Node's typed error from the HTTP body. The common frames, whole text answers in and whole
text requests out, skip wsproto's general code (`_fast_frame`); everything else is its.
A frame whose write does not finish (its caller cancelled mid-send) cuts the connection
(`WebSocket._write`): no later frame can follow half a frame.
"""

from __future__ import annotations

import collections
import contextlib
import json
import socket
import sys
from typing import Any, NoReturn

import anyio
import anyio.abc
from wsproto import ConnectionType, WSConnection
from wsproto.connection import ConnectionState
from wsproto.events import (
    AcceptConnection,
    BytesMessage,
    CloseConnection,
    Event,
    Ping,
    RejectConnection,
    RejectData,
    Request,
    TextMessage,
)

from maia.core import MaiaError

from ._fast_frame import client_text_frame, idle, whole_server_texts
from ._wire import CUT_REASON as CUT_REASON
from ._wire import MAX_MESSAGE_BYTES as MAX_MESSAGE_BYTES
from ._wire import error_from_wire as error_from_wire
from ._wire import split_url as split_url

_READ_CHUNK = 65536
_MAX_REJECT_BODY = 64 * 1024


class WebSocket:
    """One open client connection. Use `open_websocket`, then `send`/`receive`/`aclose`."""

    def __init__(self, stream: anyio.abc.ByteStream, ws: WSConnection) -> None:
        self._stream = stream
        self._ws = ws
        self._send_lock = anyio.Lock(fast_acquire=True)  # uncontended: no schedule point
        self._parts: list[Any] = []
        self._size = 0
        self._pending: list[Event] = []
        self._ready: collections.deque[str] = collections.deque()  # whole texts read fast
        self.close_code: int | None = None
        self.close_reason: str = ""
        self.cut = False  # a frame's write did not finish: closed, nothing more is written
        self._raw = _trio_socket(stream)  # under trio, the socket frames are written to

    @property
    def under_trio(self) -> bool:
        """Whether this connection runs under trio (its frames go straight to the socket)."""
        return self._raw is not None

    async def send(self, text: str | bytes) -> None:
        """Send one text message: a str, or its UTF-8 bytes (valid UTF-8, as orjson writes:
        never a binary message). Raises `anyio.BrokenResourceError`/`ClosedResourceError`."""
        payload = text.encode("utf-8") if isinstance(text, str) else text
        async with self._send_lock:
            ws = self._ws
            if self.close_code is not None or ws.state is not ConnectionState.OPEN:
                raise anyio.ClosedResourceError
            proto: Any = getattr(ws.connection, "_proto", None)
            if getattr(proto, "_outbound_opcode", 0) is None and not proto.extensions:
                frame = client_text_frame(payload)  # the common request, without wsproto's code
            else:
                frame = ws.send(TextMessage(data=payload.decode("utf-8")))
            await self._write(frame)

    async def _write(self, frame: bytes) -> None:
        """Write one whole frame (under `_send_lock`).

        Under trio the frame goes straight to the socket when it takes it whole: no
        schedule point. Otherwise (the socket is full) anyio writes the rest, and trio may
        stop that write part-way when its caller is cancelled; any later frame would land
        inside this one, so the connection is cut instead. Under asyncio a write is never
        left part-way (the transport takes the whole frame, or none of it when cancelled
        before), so nothing is cut there."""
        raw = self._raw
        if raw is not None:
            try:
                sent = raw.send(frame)
            except (BlockingIOError, InterruptedError):
                sent = 0
            except OSError:
                self._cut()  # the peer is gone: as anyio would report it
                raise anyio.BrokenResourceError from None
            if sent == len(frame):
                return
            frame = frame[sent:]
        try:
            await self._stream.send(frame)
        except BaseException:
            if raw is not None:
                self._cut()
            raise

    def _cut(self) -> None:
        """Close at once, without awaiting (the caller may be being cancelled): the socket
        is shut down, so the reader sees end of stream and the peer no later frame."""
        if self.close_code is None:
            self.close_code, self.close_reason = 1006, CUT_REASON
        self.cut = True
        if self._raw is not None:
            with contextlib.suppress(OSError):
                self._raw.shutdown(socket.SHUT_RDWR)

    async def receive(self) -> str | bytes | None:
        """The next whole message, or None once the connection is closed."""
        while True:
            if self._ready:
                return self._ready.popleft()
            while self._pending:
                message = await self._on_event(self._pending.pop(0))
                if message is not None:
                    return message
            if self.close_code is not None:
                return None
            try:
                data = await self._stream.receive(_READ_CHUNK)
            except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError):
                self.close_code = self.close_code or 1006
                return None
            self._take(data)

    def _take(self, data: bytes) -> None:
        """Parse `data`: its leading whole text frames fast (into `_ready`), the rest by
        wsproto (into `_pending`, after them in order)."""
        ws = self._ws
        connection = ws.connection
        if connection is not None and ws.state is ConnectionState.OPEN and idle(connection):
            texts, taken = whole_server_texts(data, MAX_MESSAGE_BYTES)
            self._ready.extend(texts)
            if taken == len(data):
                return
            data = data[taken:] if taken else data
        ws.receive_data(data)
        self._pending.extend(ws.events())

    async def _on_event(self, event: Event) -> str | bytes | None:
        if isinstance(event, TextMessage | BytesMessage):
            self._size += len(event.data)
            if self._size > MAX_MESSAGE_BYTES:
                await self._close(1009, "frame_too_large")
                return None
            self._parts.append(event.data)
            if not event.message_finished:
                return None
            parts, self._parts, self._size = self._parts, [], 0
            if isinstance(event, TextMessage):
                return "".join(str(part) for part in parts)
            return b"".join(bytes(part) for part in parts)
        if isinstance(event, Ping):
            async with self._send_lock:
                if self.cut:
                    raise anyio.ClosedResourceError
                await self._write(self._ws.send(event.response()))
        elif isinstance(event, CloseConnection):
            self.close_code, self.close_reason = event.code, event.reason or ""
            try:
                async with self._send_lock:
                    if not self.cut:
                        await self._write(self._ws.send(event.response()))
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                pass
        return None

    async def _close(self, code: int, reason: str) -> None:
        self.close_code, self.close_reason = code, reason
        try:
            async with self._send_lock:
                if not self.cut:
                    await self._write(self._ws.send(CloseConnection(code=code, reason=reason)))
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            pass

    async def aclose(self) -> None:
        """Say goodbye (bounded) and close the TCP stream."""
        with anyio.CancelScope(shield=True):
            with anyio.move_on_after(1):
                if self.close_code is None:
                    await self._close(1000, "bye")
            await self._stream.aclose()


def _trio_socket(stream: anyio.abc.ByteStream) -> socket.socket | None:
    """The non-blocking socket under `stream` when this runs under trio and `stream` is a
    plain TCP stream (never one wrapping it, such as TLS, whose bytes are not the
    socket's), else None."""
    trio = sys.modules.get("trio")  # not imported: not under trio (asyncio never loads it)
    if trio is None or not trio.lowlevel.in_trio_run():
        return None
    if not isinstance(stream, anyio.abc.SocketStream):
        return None
    raw = stream.extra(anyio.abc.SocketAttribute.raw_socket, None)
    return raw if isinstance(raw, socket.socket) and raw.gettimeout() == 0.0 else None


async def open_websocket(
    url: str, *, headers: list[tuple[bytes, bytes]], timeout_s: float = 5.0
) -> WebSocket:
    """Connect and upgrade.

    Raises `MaiaError`: unavailable (nothing listens, or the timeout), or the Node's typed
    refusal (unauthenticated, invalid_request, ...) when it declines the upgrade.
    """
    host, port, path = split_url(url)
    try:
        with anyio.fail_after(timeout_s):
            stream = await anyio.connect_tcp(host.strip("[]"), port)
    except (OSError, TimeoutError) as error:
        raise MaiaError(
            "unavailable",
            f"node at {url} is unavailable: {error}",
            {"target": "node", "url": url},
        ) from error
    ws = WSConnection(ConnectionType.CLIENT)
    try:
        with anyio.fail_after(timeout_s):
            await stream.send(
                ws.send(Request(host=f"{host}:{port}", target=path, extra_headers=headers))
            )
            return await _await_accept(stream, ws, url)
    except BaseException as error:
        await anyio.aclose_forcefully(stream)
        if isinstance(error, TimeoutError):
            raise MaiaError(
                "unavailable", f"node at {url} did not answer the upgrade", {"url": url}
            ) from error
        raise


async def _await_accept(stream: anyio.abc.ByteStream, ws: WSConnection, url: str) -> WebSocket:
    status, body = 0, b""
    while True:
        try:
            data = await stream.receive(_READ_CHUNK)
        except (anyio.EndOfStream, anyio.BrokenResourceError) as error:
            if status:
                break
            raise MaiaError(
                "unavailable", f"node at {url} closed during the upgrade", {"url": url}
            ) from error
        ws.receive_data(data)
        for event in ws.events():
            if isinstance(event, AcceptConnection):
                return WebSocket(stream, ws)
            if isinstance(event, RejectConnection):
                status = event.status_code
                if not event.has_body:
                    _refused(status, body, url)
            elif isinstance(event, RejectData):
                body += event.data
                if event.body_finished or len(body) > _MAX_REJECT_BODY:
                    _refused(status, body, url)
    _refused(status, body, url)


def _refused(status: int, body: bytes, url: str) -> NoReturn:
    try:
        error = json.loads(body)["error"]
    except (ValueError, KeyError, TypeError):
        raise MaiaError(
            "unavailable", f"node at {url} refused the connection: HTTP {status}", {"url": url}
        ) from None
    raise error_from_wire(error)
