"""The API server: trio-websocket on 127.0.0.1, one task per connection, requests in parallel.

At most `MAX_CONNECTIONS` connections are open at once, counted from the admitted upgrade
(beyond: HTTP 503, `overloaded`, instead of the upgrade; see `_websocket` for the TCP
limit). Each connection must open with `node.hello`; until the hello succeeds, frames are
handled one at a time, so a pipelined request after the hello sees it done. One with no
successful hello within `HELLO_WITHIN_S` is told `hello_required` and closed (1008), so an
idle peer does not hold one of the slots forever; a second hello is `invalid_request` (the
connection stays open), as on the observation socket. After it, a request whose handler answers
at once (`Dispatcher.begin`) is answered before the next frame is read; one that has to
wait runs in its own task (at most `MAX_IN_FLIGHT` per connection; beyond that
`overloaded`), and answers go out as they finish, matched by `id`.

Bad frames get typed error answers and the connection stays open; a request that fails
in a way nobody foresaw answers `internal_error` (logged), and a connection that fails is
logged and closed alone. The exceptions are what RFC 6455 says to fail the connection for: a
frame over `MAX_FRAME_BYTES` (reading it whole would defeat the bound) is closed with code
1009 as soon as its header announces it, invalid UTF-8 in a text frame with 1007; the SDK
turns the 1009 close into `MaiaError("frame_too_large")`.
"""

from __future__ import annotations

import itertools
import logging
from typing import Any

import attrs
import trio
from trio_websocket import ConnectionClosed, WebSocketConnection, WebSocketRequest

from maia.core import MaiaError
from maia.observe import OBSERVATIONS_PATH, accept_observations, serve_observation_connection
from maia.protocol import take_request_id

from ._dispatch import LOCAL_USER_ROLE, Call, Dispatcher, Pending
from ._gate import Refusal, check_upgrade
from ._websocket import DirectConnection, GuardedServer, send_text
from ._wire import MAX_FRAME_BYTES, Request, encode_error, encode_result, parse_request

MAX_IN_FLIGHT = 32
MAX_CONNECTIONS = 256
HELLO = "node.hello"
HELLO_WITHIN_S = 10.0  # as the observation socket's FIRST_FRAME_TIMEOUT_S
log = logging.getLogger("maia.node")


@attrs.frozen
class ApiStatistics:
    connections: int
    accepted: int
    refused: int
    requests: int


class ApiServer:
    """Serves `/api/v1`. Start with `await nursery.start(server.serve, port)`."""

    def __init__(
        self,
        dispatcher: Dispatcher,
        services: Any,
        *,
        token: str,
        max_connections: int = MAX_CONNECTIONS,
    ) -> None:
        self._max_connections = max_connections
        self._dispatcher = dispatcher
        self._services = services
        self._token = token
        self._port = 0
        self._ids = itertools.count(1)
        self._server: GuardedServer | None = None
        self._accepted = 0
        self._admitted = 0  # upgrades let past the cap, until their connection ends
        self._refused = 0
        self._requests = 0
        self.listeners: list[trio.SocketListener] = []  # while serving

    @property
    def port(self) -> int:
        return self._port

    def statistics(self) -> ApiStatistics:
        open_now = self._server.open if self._server is not None else 0
        return ApiStatistics(open_now, self._accepted, self._refused, self._requests)

    async def serve(self, port: int = 0, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        """Listen on 127.0.0.1:`port` (0: a free port) until cancelled; reports the port."""
        listeners = await trio.open_tcp_listeners(port, host="127.0.0.1")
        self.listeners = listeners
        server = GuardedServer(
            self._handle,
            listeners,
            max_connections=self._max_connections,
            max_message_size=MAX_FRAME_BYTES,
            connect_timeout=10,
            disconnect_timeout=2,
        )
        self._server = server
        async with trio.open_nursery() as nursery:
            await nursery.start(server.run)
            self._port = server.port
            task_status.started(self._port)

    async def _handle(self, request: WebSocketRequest) -> None:
        # trio-websocket has no public accessor for the Host that wsproto lifted out.
        host: str | None = getattr(getattr(request, "_event", None), "host", None)
        refusal = check_upgrade(
            request.path, host, request.headers, token=self._token, port=self._port
        )
        # Admitted ones only: `GuardedServer.open` also counts a burst's connections still in
        # their handshake, which would refuse ones that fit. No await between the check and
        # the count, so simultaneous upgrades cannot slip past the cap.
        if refusal is None and self._admitted >= self._max_connections:
            refusal = Refusal(
                503,
                MaiaError(
                    "overloaded",
                    f"the API is overloaded: {self._max_connections} connections are open",
                    {"target": "api", "limit": self._max_connections},
                ),
            )
        if refusal is not None:
            self._refused += 1
            await request.reject(
                refusal.status,
                extra_headers=[(b"Content-Type", b"application/json"), *refusal.headers],
                body=refusal.body(),
            )
            return
        self._admitted += 1
        try:
            if request.path.split("?", 1)[0] == OBSERVATIONS_PATH:
                await self._observe(request)
                return
            socket = await request.accept()
            self._accepted += 1
            await _Connection(self, socket, next(self._ids)).serve()
        finally:
            self._admitted -= 1

    async def _observe(self, request: WebSocketRequest) -> None:
        """The observation socket (maia.observe), behind the same gate and connection limit."""
        hub = getattr(self._services, "observations", None)
        if hub is None:
            self._refused += 1
            unavailable = Refusal(
                503, MaiaError("unavailable", "observations are unavailable: not running",
                               {"target": "observations"}),
            )  # fmt: skip
            await request.reject(
                503, extra_headers=[(b"Content-Type", b"application/json")],
                body=unavailable.body(),
            )  # fmt: skip
            return
        socket = await accept_observations(request)
        if socket is None:
            self._refused += 1
            return
        self._accepted += 1
        await serve_observation_connection(socket, hub)


class _Connection:
    def __init__(self, server: ApiServer, socket: WebSocketConnection, number: int) -> None:
        self._server = server
        self._socket = socket
        self._number = number
        self._greeted = False
        self._in_flight = 0
        self._nursery: trio.Nursery | None = None  # while serving
        self._failure: Exception | None = None  # what a frame handled direct raised
        self._direct = socket if isinstance(socket, DirectConnection) else None

    async def serve(self) -> None:
        socket = self._socket
        direct = self._direct
        receive = socket.get_message if direct is None else direct.next_message
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            if direct is not None:
                direct.on_message = self._on_direct
            nursery.start_soon(self._hello_deadline)
            try:
                while True:
                    frame = await receive()
                    await self._on_frame(frame, nursery)
            except ConnectionClosed:
                pass
            finally:
                if direct is not None:
                    direct.on_message = None
                self._nursery = None
                nursery.cancel_scope.cancel()
        if self._failure is not None:
            raise self._failure  # as if this task had raised it: logged, this connection closed

    async def _hello_deadline(self) -> None:
        await trio.sleep(HELLO_WITHIN_S)
        if self._greeted:
            return
        why = f"no successful {HELLO} within {HELLO_WITHIN_S:g} s"
        await self._send(encode_error(None, MaiaError("hello_required", why, {})))
        with trio.move_on_after(2):  # the close handshake is bounded too
            await self._socket.aclose(code=1008, reason=why)

    async def _on_direct(self, frame: str) -> None:
        """A frame the reader task hands over while `serve` waits with nothing queued
        (`DirectConnection`): handled as `serve` would, one trio hand-off fewer."""
        nursery = self._nursery
        if nursery is None:
            return  # serving ended: the connection is closing
        try:
            await self._on_frame(frame, nursery)
        except Exception as error:  # a bug of ours: end this connection as `serve` would
            self._failure = error
            nursery.cancel_scope.cancel()

    async def _on_frame(self, frame: str | bytes, nursery: trio.Nursery) -> None:
        self._server._requests += 1
        try:
            request = parse_request(frame)
        except MaiaError as error:
            await self._send(encode_error(take_request_id(error), error))
            return
        except Exception:
            log.exception("a frame of connection %d could not be read", self._number)
            await self._send(encode_error(None, _internal("(unread)")))
            return
        if not self._greeted:
            if request.method != HELLO:
                await self._send(
                    encode_error(
                        request.id,
                        MaiaError(
                            "hello_required",
                            "the first request must be node.hello",
                            {"method": request.method},
                        ),
                    )
                )
                return
            self._greeted = await self._run(request)
            return
        if self._in_flight >= MAX_IN_FLIGHT:  # any request, before what it asks is judged
            overloaded = MaiaError(
                "overloaded",
                f"connection is overloaded: {MAX_IN_FLIGHT} requests in flight",
                {"target": "connection", "limit": MAX_IN_FLIGHT},
            )
            await self._send(encode_error(request.id, overloaded))
            return
        if request.method == HELLO:  # as on the observation socket: one hello a connection
            await self._send(encode_error(request.id, _second_hello()))
            return
        call = self._call(request)
        try:
            answer = self._server._dispatcher.begin(call, request.params)
        except MaiaError as error:
            await self._send(encode_error(request.id, error))
            return
        except Exception:
            await self._send(self._internal(request))
            return
        if isinstance(answer, Pending):
            self._in_flight += 1
            if self._direct is not None:
                self._direct.in_flight = self._in_flight
            nursery.start_soon(self._finish_counted, request, call, answer)
            return
        await self._answer(request, answer)

    async def _finish_counted(self, request: Request, call: Call, pending: Pending) -> None:
        try:
            try:
                result = await self._server._dispatcher.finish(call, pending)
            except MaiaError as error:
                await self._send(encode_error(request.id, error))
                return
            except Exception:
                await self._send(self._internal(request))
                return
            await self._answer(request, result)
        finally:
            self._in_flight -= 1
            if self._direct is not None:  # an invalid frame's Close may wait for this
                self._direct.in_flight = self._in_flight
                self._direct.settled()

    def _call(self, request: Request) -> Call:
        return Call(
            role=LOCAL_USER_ROLE,
            method=request.method,
            connection_id=self._number,
            services=self._server._services,
        )

    async def _run(self, request: Request) -> bool:
        """Answer `request` in this task, whether its handler waits or not (the hello)."""
        try:
            result = await self._server._dispatcher.dispatch(self._call(request), request.params)
        except MaiaError as error:
            await self._send(encode_error(request.id, error))
            return False
        except Exception:
            await self._send(self._internal(request))
            return False
        return await self._answer(request, result)

    async def _answer(self, request: Request, result: Any) -> bool:
        """Send `result` (encoded by the dispatcher) as the answer to `request`."""
        try:
            deprecation = self._server._dispatcher.deprecation_of(request.method)
            frame = encode_result(request.id, result, deprecation)
        except Exception:
            await self._send(self._internal(request))
            return False
        # The bound is bytes of UTF-8: a str can pass it only when 4 bytes a character
        # could, and only then is it encoded to measure.
        if len(frame) * 4 > MAX_FRAME_BYTES and len(frame.encode()) > MAX_FRAME_BYTES:
            too_large = MaiaError(
                "frame_too_large",
                f"the answer to {request.method} exceeds {MAX_FRAME_BYTES} bytes",
                {"limit": MAX_FRAME_BYTES},
            )
            await self._send(encode_error(request.id, too_large))
            return False
        await self._send(frame)
        return True

    def _internal(self, request: Request) -> str:
        # A bug of ours (an answer orjson cannot write, a check that raised): it fails
        # this request only, and is logged where the Node's log shows it.
        log.exception("request %s of connection %d failed", request.method, self._number)
        return encode_error(request.id, _internal(request.method))

    async def _send(self, frame: str) -> None:
        # A peer that left has nowhere to receive its pending answers. Not contextlib's
        # suppress: its context manager costs a microsecond on every answer.
        try:  # noqa: SIM105
            await send_text(self._socket, frame)
        except ConnectionClosed:
            pass


def _second_hello() -> MaiaError:
    return MaiaError(
        "invalid_request",
        f"the request is malformed: {HELLO} was already answered on this connection",
        {"method": HELLO, "path": "method"},
    )


def _internal(method: str) -> MaiaError:
    return MaiaError("internal_error", "an internal error occurred", {"method": method})
