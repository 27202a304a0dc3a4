"""The WebSocket layer under the API: trio-websocket's server, made to keep RFC 6455 and
to count connections from the moment they are accepted.

What the libraries leave out, and where it is added:
- A connection counts against the cap from TCP accept, not from its upgrade, so a burst of
  simultaneous handshakes cannot slip past it (`GuardedServer.open`); far beyond the cap a
  connection is closed at once, without reading its handshake.
- Only an `HTTP/1.1` request line may upgrade (RFC 6455 §4.1; h11 also parses 1.0 and 2.0):
  others get HTTP 505 before the handler sees them.
- A frame that fails to parse (invalid UTF-8 in a text frame: 1007; a bad opcode or an
  unmasked frame: 1002) and a frame header announcing more than the message bound (1009)
  are answered with a Close frame carrying that code (RFC 6455 §7.1.7), then TCP is
  closed. wsproto reports the first as an event trio-websocket answers with a bare TCP
  close, and the second is noticed only once the bytes have arrived: `_StrictConnection`
  parses eagerly and queues the failure's Close after the events read before it, and
  `DirectConnection` sends it once the requests read before it are answered (those handed
  over, those in trio-websocket's channel and those in flight; the wait is bounded by
  `DRAIN_TIMEOUT`). Nothing after the invalid frame is read.
- One whole masked text frame in one read, the common request, is read without wsproto's
  general parser, and a whole text answer written without its serializer (`_fast_frame`);
  everything else goes through it, so the rules above hold.
- An answer is written at once when nothing else is being written and the socket takes
  it whole (`send_text`): trio-websocket's own way takes a FIFO lock and the socket's send,
  two schedule points an answer.
- A whole text message may be handed to the connection's handler by the reader task itself
  (`DirectConnection.on_message`), not through trio-websocket's message channel and the
  handler task's wake-up; only while nothing waits in that channel, so messages keep their
  order.
- The eager parse reads a peer's Close with the frames before it, so wsproto is already
  "remote closing" when those are answered: answers and pongs may still be sent then (RFC
  6455 §5.5.1: until our own Close), and `_StrictConnection.send` writes them, where
  wsproto refuses them.
- Whatever a connection's handler or its reader task raises is logged and ends that
  connection only; nothing a peer sends can end the server task, and so every other
  connection.
"""

from __future__ import annotations

import collections
import logging
import os
from collections.abc import Awaitable, Callable, Generator
from typing import Any

import orjson
import trio
from trio_websocket import ConnectionClosed, WebSocketConnection, WebSocketRequest, WebSocketServer
from wsproto import ConnectionType, WSConnection
from wsproto.connection import ConnectionState
from wsproto.events import (
    AcceptConnection,
    BytesMessage,
    CloseConnection,
    Event,
    Message,
    Ping,
    Pong,
    RejectConnection,
    RejectData,
    Request,
    TextMessage,
)
from wsproto.utilities import RemoteProtocolError

from maia.core import MaiaError

from ._fast_frame import server_text_frame, whole_text_frames

log = logging.getLogger("maia.node")
HARD_LIMIT_FACTOR = 2  # beyond factor × cap, a connection is closed without an answer
MESSAGE_TOO_BIG = 1009
DRAIN_TIMEOUT = 5.0  # how long an invalid frame's Close waits for earlier answers


class _StrictConnection(WSConnection):
    """wsproto's server connection that fails a broken frame with a Close frame."""

    def __init__(self, max_message_bytes: int) -> None:
        super().__init__(ConnectionType.SERVER)
        self._max_message_bytes = max_message_bytes
        self._parsed: collections.deque[Event] = collections.deque()
        # The Close to fail the connection with, queued after the events read before the
        # invalid frame, so those are handled first (`DirectConnection`).
        self.failure: CloseConnection | None = None

    @property
    def http_version(self) -> bytes | None:
        """The request line's HTTP version (b"1.1"), once the request was read."""
        h11 = getattr(self.handshake, "_h11_connection", None)
        version = getattr(h11, "their_http_version", None)
        return version if isinstance(version, bytes) else None

    def receive_data(self, data: bytes | None) -> None:
        if self.failure is not None:
            return  # failed: nothing after the invalid frame is read
        connection = self.connection
        if connection is not None and data and connection.state is ConnectionState.OPEN:
            # The common case, whole text frames, read without wsproto (`_fast_frame`).
            texts, taken = whole_text_frames(data, connection, self._max_message_bytes)
            self._parsed.extend(TextMessage(data=text) for text in texts)
            if taken == len(data):
                return
            data = data[taken:] if taken else data
        super().receive_data(data)
        connection = self.connection
        if connection is None or data is None or connection.state is not ConnectionState.OPEN:
            return
        for event in connection.events():
            # A header announcing more than the bound fails the connection before any of its
            # payload counts (even bytes that would fail it otherwise, such as bad UTF-8).
            if self._fail_if_oversized(connection):
                return
            if isinstance(event, CloseConnection) and connection.state is ConnectionState.OPEN:
                # Not the peer's Close (that moves the state): wsproto's parse failure.
                self._fail(event.code, event.reason or "invalid frame")
                return
            self._parsed.append(event)
        self._fail_if_oversized(connection)

    def _fail_if_oversized(self, connection: Any) -> bool:
        """Fail with 1009 if the frame wsproto is reading announces more than the bound."""
        header = getattr(getattr(getattr(connection, "_proto", None), "_frame_decoder", None),
                         "header", None)  # fmt: skip
        announced = getattr(header, "payload_len", 0)
        if not isinstance(announced, int) or announced <= self._max_message_bytes:
            return False
        reason = f"a frame of {announced} bytes exceeds {self._max_message_bytes} bytes"
        self._fail(MESSAGE_TOO_BIG, reason)
        return True

    def _fail(self, code: int, reason: str) -> None:
        """Fail the connection with a Close of `code` once what was read before it is
        handled: queued after those events, for `DirectConnection` to send."""
        self.failure = CloseConnection(code=code, reason=reason)
        self._parsed.append(self.failure)

    def send(self, event: Event) -> bytes:
        connection = self.connection
        if type(event) is TextMessage and event.message_finished and connection is not None:
            proto = getattr(connection, "_proto", None)
            if (
                connection.state is ConnectionState.OPEN
                and getattr(proto, "_outbound_opcode", 0) is None
                and not getattr(proto, "extensions", True)
                and not getattr(proto, "client", True)
            ):  # the common answer, written without wsproto (`_fast_frame`)
                return server_text_frame(event.data)
        if (
            connection is not None
            and connection.state is ConnectionState.REMOTE_CLOSING
            and isinstance(event, Message | Pong)
        ):  # the peer's Close read with frames before it: those are still answered
            proto = connection._proto
            if isinstance(event, Pong):
                return bytes(proto.pong(event.payload))
            return bytes(proto.send_data(event.data, event.message_finished))
        if isinstance(event, AcceptConnection):
            return self._accept(event)
        return super().send(event)

    def _accept(self, event: AcceptConnection) -> bytes:
        """The 101, and a Close 1002 right after it when the client sent frames before the
        101 (RFC 6455 4.1: it must wait). wsproto's server handshake drops those bytes, so
        the requests in them would go unanswered with no word: the client is told."""
        accepted = super().send(event)
        h11 = getattr(self.handshake, "_h11_connection", None)
        trailing = getattr(h11, "trailing_data", (b"", False))[0]
        connection = self.connection
        if not trailing or connection is None or connection.state is not ConnectionState.OPEN:
            return accepted
        reason = f"{len(trailing)} bytes of frames were sent before the handshake's 101"
        self.failure = CloseConnection(code=1002, reason=reason)
        return accepted + connection.send(self.failure)

    def events(self) -> Generator[Event, None, None]:
        yield from self.handshake.events()
        while self._parsed:
            yield self._parsed.popleft()
        if self.connection is not None:
            yield from self.connection.events()


class DirectConnection(WebSocketConnection):
    """trio-websocket's connection whose reader task hands a whole text message straight to
    `on_message` while its handler is idle (`direct` says so): nothing queued in the
    message channel, no message being reassembled. Otherwise, or with no `on_message`,
    messages go through the channel to `get_message` as before, so order is kept: a
    message queued there is taken by the handler before the next one comes direct.
    `on_message` runs in the reader task (no frame is read meanwhile: backpressure as
    before) and must not raise. The handler waits with `next_message`."""

    on_message: Callable[[str], Awaitable[None]] | None = None
    direct = False  # set by the handler while it waits in get_message with nothing queued
    in_flight = 0  # requests the handler answers from tasks of their own, kept by it
    _idle: trio.Event | None = None  # set by `settled`, for a failure's Close

    async def _handle_message_event(self, event: TextMessage | BytesMessage) -> None:
        handler = self.on_message
        if (
            handler is None
            or not self.direct
            or type(event) is not TextMessage
            or not event.message_finished
            or self._message_parts
            or len(event.data) > self._max_message_size
        ):  # `direct` implies an empty channel: see `next_message`
            self.direct = False  # this one goes through the channel: the next ones after it
            await super()._handle_message_event(event)
            return
        await handler(event.data)

    async def _reader_task(self) -> None:
        """trio-websocket's reader loop for a server connection, the same steps, with the
        socket read as the worker pipes are: wait until readable, then one read (trio's
        `SocketStream.receive_some` adds a conflict detector, an error-translating context
        manager and a try-first read), and no debug logging per event."""
        stream = self._stream
        if type(stream) is not trio.SocketStream or self._initial_request:
            await super()._reader_task()
            return
        handlers: dict[type[Event], Callable[[Any], Awaitable[None]]] = {
            AcceptConnection: self._handle_accept_connection_event,
            BytesMessage: self._handle_message_event,
            CloseConnection: self._handle_close_connection_event,
            Ping: self._handle_ping_event,
            Pong: self._handle_pong_event,
            RejectConnection: self._handle_reject_connection_event,
            RejectData: self._handle_reject_data_event,
            Request: self._handle_request_event,
            TextMessage: self._handle_message_event,
        }
        ws, size = self._wsproto, self._receive_buffer_size or 65536
        async with self._send_channel:
            while self._reader_running:
                for event in ws.events():
                    handler = handlers.get(type(event))
                    if handler is None:
                        log.warning("API connection: an unknown event %s", type(event).__name__)
                        continue
                    try:
                        await handler(event)
                    except ConnectionClosed:
                        self._reader_running = False
                        break
                try:
                    data = await _receive(stream.socket, size)
                except (trio.BrokenResourceError, trio.ClosedResourceError):
                    await self._abort_web_socket()
                    break
                if not data:  # TCP closed: abnormal unless the WebSocket closed first
                    if ws.state is not ConnectionState.CLOSED:
                        await self._abort_web_socket()
                    break
                if ws.state is not ConnectionState.CLOSED:
                    try:
                        ws.receive_data(data)
                    except RemoteProtocolError as error:
                        if error.event_hint:
                            await self._send(error.event_hint)
                        await self._close_stream()

    async def _handle_close_connection_event(self, event: CloseConnection) -> None:
        strict = self._wsproto
        if not isinstance(strict, _StrictConnection) or event is not strict.failure:
            await super()._handle_close_connection_event(event)
            return
        # An invalid frame, after the events read before it were handled here: wait (bounded)
        # until the handler has answered those it took through the channel, then fail the
        # connection as RFC 6455 §7.1.7 says: our Close with its code, then TCP closed.
        if self.on_message is not None:
            with trio.move_on_after(DRAIN_TIMEOUT):
                while not self._answered():
                    self._idle = trio.Event()
                    await self._idle.wait()
        try:
            await self._send(event)
        finally:
            await self._closed_by(event)
        raise ConnectionClosed(self._close_reason)  # the reader stops here

    async def _closed_by(self, failure: CloseConnection) -> None:
        """Mark the connection closed by our `failure` (its Close sent), then close TCP."""
        await self._close_web_socket(failure.code, failure.reason or None)
        self._close_handshake.set()
        await self._close_stream()

    async def _accept(
        self, request: Request, subprotocol: str | None, extra_headers: list[tuple[bytes, bytes]]
    ) -> None:
        await super()._accept(request, subprotocol, extra_headers)
        failure = getattr(self._wsproto, "failure", None)
        if failure is not None:  # frames before the 101: its Close went out with it
            await self._closed_by(failure)

    def _answered(self) -> bool:
        """Whether every request read so far is answered: the handler waits in
        `next_message` with nothing queued for it, and none is in flight."""
        return self.direct and not self.in_flight  # `direct`: nothing queued (`next_message`)

    def settled(self) -> None:
        """Called by the handler when a request in flight is answered (`in_flight`)."""
        if self._idle is not None:
            self._idle.set()

    async def next_message(self) -> str | bytes:
        """`get_message`, but while it waits with nothing queued the reader task may hand
        messages straight to `on_message` instead. Raises `ConnectionClosed`.

        `direct` is set only here, right after the channel was found empty (no queued
        message, no blocked sender), and every message that goes into the channel clears
        it first (`_handle_message_event`), so while it is set the channel is empty: the
        reader need not ask the channel (its `statistics()` builds an object a request)."""
        try:
            return self._recv_channel.receive_nowait()
        except trio.WouldBlock:
            pass
        except (trio.ClosedResourceError, trio.EndOfChannel):
            raise ConnectionClosed(self._close_reason) from None
        self.direct = True
        self.settled()  # a failure's Close may wait for this
        try:
            return await self.get_message()
        finally:
            self.direct = False


class GuardedServer(WebSocketServer):
    """trio-websocket's server with the checks above; `open` counts accepted connections."""

    def __init__(
        self,
        handler: Callable[[WebSocketRequest], Awaitable[None]],
        listeners: list[trio.SocketListener],
        *,
        max_connections: int,
        max_message_size: int,
        connect_timeout: float,
        disconnect_timeout: float,
    ) -> None:
        super().__init__(
            handler,
            listeners,
            max_message_size=max_message_size,
            connect_timeout=connect_timeout,
            disconnect_timeout=disconnect_timeout,
        )
        self.open = 0
        self._hard_limit = max_connections * HARD_LIMIT_FACTOR
        self._numbers = 0

    async def _handle_connection(self, stream: trio.abc.Stream) -> None:
        # Replaces trio-websocket's own (same steps), to count, check and contain.
        self.open += 1
        self._numbers += 1
        try:
            if self.open > self._hard_limit:
                await stream.aclose()
                return
            await self._serve_stream(stream, self._numbers)
        finally:
            self.open -= 1

    async def _serve_stream(self, stream: trio.abc.Stream, number: int) -> None:
        strict = _StrictConnection(self._max_message_size)
        connection = DirectConnection(
            stream,
            strict,
            message_queue_size=self._message_queue_size,
            max_message_size=self._max_message_size,
            receive_buffer_size=self._receive_buffer_size,
        )
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_contained_reader, connection, number)
            with trio.move_on_after(self._connect_timeout) as connect_scope:
                request = await connection._get_request()
            if connect_scope.cancelled_caught:
                nursery.cancel_scope.cancel()
                await stream.aclose()
                return
            try:
                if strict.http_version != b"1.1":
                    await _refuse_version(request, strict.http_version)
                else:
                    await self._handler(request)
            except ConnectionClosed:
                pass  # the peer left: nothing to answer
            except Exception:
                log.exception("API connection %d failed; it is closed, the others go on", number)
            finally:
                with trio.move_on_after(self._disconnect_timeout):
                    await connection.aclose()


async def _receive(sock: trio.socket.SocketType, size: int) -> bytes:
    """One read of at most `size` bytes once `sock` is readable (b"" at end of stream).
    Raises `ClosedResourceError` once the socket is closed, `BrokenResourceError` when the
    peer reset it."""
    fd = sock.fileno()  # -1 once closed
    if fd < 0:
        raise trio.ClosedResourceError("the socket was closed")
    try:  # what a busy client sent meanwhile is there at once: no epoll round
        data = os.read(fd, size)
    except BlockingIOError:
        pass
    except OSError as error:
        raise trio.BrokenResourceError from error
    else:
        await trio.lowlevel.cancel_shielded_checkpoint()  # the others' turn, as trio's read
        return data
    while True:
        await trio.lowlevel.wait_readable(fd)  # closing it meanwhile raises
        fd = sock.fileno()  # fetched again: closed meanwhile, its number may be reused
        if fd < 0:
            raise trio.ClosedResourceError("the socket was closed")
        try:
            return os.read(fd, size)
        except BlockingIOError:  # woken without data after all: wait again
            continue
        except OSError as error:
            raise trio.BrokenResourceError from error


async def _contained_reader(connection: WebSocketConnection, number: int) -> None:
    """trio-websocket's reader task, whose failure (a bug, or a state wsproto refuses to
    send in) ends this connection, not the server: without this it escaped the connection's
    nursery and ended every connection."""
    try:
        await connection._reader_task()
    except Exception:
        log.exception("API connection %d: its reader failed; it is closed, the others go on",
                      number)  # fmt: skip
        try:
            await connection._abort_web_socket()
        finally:
            await connection._close_stream()


async def send_text(connection: WebSocketConnection, text: str) -> None:
    """`connection.send_message(text)`, with no schedule point when no other send is under
    way and the socket takes the whole frame: the frame is written straight to the socket
    under trio-websocket's send lock, taken without waiting. What the socket does not take
    is written by the stream as trio-websocket writes, still under that lock, so frames never
    interleave. A closing connection, a send under way or another kind of stream: trio-
    websocket's own way. Raises `ConnectionClosed` as `send_message` does."""
    lock = connection._stream_lock
    stream = connection._stream
    if (
        connection._close_reason is not None
        or lock.locked()
        or type(stream) is not trio.SocketStream
        or stream.socket.did_shutdown_SHUT_WR
    ):
        await connection.send_message(text)
        return
    data = connection._wsproto.send(TextMessage(data=text))
    lock.acquire_nowait()
    try:
        try:
            sent = os.write(stream.socket.fileno(), data)
        except BlockingIOError:  # the socket's buffer is full: the stream waits for room
            sent = 0
        except OSError:  # the peer is gone (EPIPE, ECONNRESET): as trio-websocket reports it
            sent = -1
        if 0 <= sent < len(data):
            try:
                await stream.send_all(memoryview(data)[sent:])
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                sent = -1
    finally:
        lock.release()
    if sent < 0:
        await connection._abort_web_socket()
        raise ConnectionClosed(connection._close_reason)


async def _refuse_version(request: WebSocketRequest, version: bytes | None) -> None:
    shown = version.decode("ascii", "replace") if version else "unknown"
    error = MaiaError(
        "invalid_request",
        f"the request is malformed: a WebSocket upgrade needs HTTP/1.1, not HTTP/{shown}",
        {"httpVersion": shown},
    )
    await request.reject(
        505,
        extra_headers=[(b"Content-Type", b"application/json")],
        body=orjson.dumps({"ok": False, "error": error.to_wire()}),
    )
