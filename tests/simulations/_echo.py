"""A tiny echo pair for the proxy tests: a real trio-websocket server on 127.0.0.1 that
records what reached it and echoes it back, and two real clients through the proxy:
trio-websocket's, and Maia's own client transport (anyio + wsproto). A connection the
proxy cuts uses Maia's: trio-websocket's client leaves its socket open after a TCP close
before the close handshake (`_abort_web_socket`), a ResourceWarning at a random later GC."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager

import attrs
import trio
from trio_websocket import (
    ConnectionClosed,
    WebSocketConnection,
    WebSocketRequest,
    open_websocket_url,
    serve_websocket,
)

from maia.client._transport import WebSocket, open_websocket
from maia.node._websocket import GuardedServer
from simulations import LoopbackProxy, ProxySettings, start_proxy

WAIT_S = 20.0  # the bound on every wait in these tests; generous, never a timing claim
SENTINEL = "sentinel"
REFUSAL = b'{"error": {"code": "role_denied", "message": "not you", "details": {"k": 1}}}'


@attrs.define
class EchoServer:
    port: int = 0
    received: list[str | bytes] = attrs.Factory(list)
    connections: int = 0
    reject: bool = False

    async def handler(self, request: WebSocketRequest) -> None:
        if self.reject:
            await request.reject(403, body=REFUSAL)
            return
        self.connections += 1
        ws = await request.accept()
        try:
            for _ in range(10_000):
                message = await ws.get_message()
                self.received.append(message)
                await ws.send_message(message)
        except ConnectionClosed:
            pass


async def start_pair(
    nursery: trio.Nursery,
    seed: int = 7,
    settings: ProxySettings | None = None,
    *,
    guarded: bool = False,
) -> tuple[EchoServer, LoopbackProxy]:
    """An echo server and a proxy in front of it, both serving in `nursery`; `guarded`
    serves with the Node API's own strict server (`maia.node._websocket.GuardedServer`)."""
    settings = settings or ProxySettings()
    echo = EchoServer()
    if guarded:
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        guard = GuardedServer(
            echo.handler,
            listeners,
            max_connections=8,
            max_message_size=1024 * 1024,
            connect_timeout=WAIT_S,
            disconnect_timeout=2,
        )
        await nursery.start(guard.run)
        echo.port = guard.port
    else:
        server = await nursery.start(serve_websocket, echo.handler, "127.0.0.1", 0, None)
        echo.port = server.port
    proxy = await start_proxy(nursery, echo.port, seed=seed, settings=settings)
    return echo, proxy


def connect(proxy: LoopbackProxy) -> AbstractAsyncContextManager[WebSocketConnection]:
    """A client connection through the proxy."""
    return open_websocket_url(proxy.url + "/echo", connect_timeout=WAIT_S)


async def open_maia(proxy: LoopbackProxy) -> WebSocket:
    """Maia's client transport through the proxy (close it with `aclose`)."""
    return await open_websocket(proxy.url + "/echo", headers=[], timeout_s=WAIT_S)


async def receive_until_sentinel(ws: WebSocketConnection, limit: int = 1_000) -> list[str]:
    """Every message up to (not including) the sentinel, within `WAIT_S`."""
    received: list[str] = []
    with trio.fail_after(WAIT_S):
        for _ in range(limit):
            message = await ws.get_message()
            assert isinstance(message, str)
            if message == SENTINEL:
                return received
            received.append(message)
    raise AssertionError(f"no sentinel within {limit} messages")


async def wait_for(condition: Callable[[], bool], what: str) -> None:
    """Poll `condition()` (bounded in time and count) until it holds."""
    with trio.fail_after(WAIT_S):
        for _ in range(100_000):
            if condition():
                return
            await trio.sleep(0.01)
    raise AssertionError(f"never: {what}")
