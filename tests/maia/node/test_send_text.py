"""`send_text`, the answer's send: over a real loopback WebSocket, many tasks sending large
answers at once (so the send lock is often held and they queue on trio-websocket's own
path) each get their message across whole and unmixed; after the peer left it raises
ConnectionClosed as `send_message` does."""

from __future__ import annotations

import pytest
import trio
from trio_websocket import (
    ConnectionClosed,
    WebSocketConnection,
    WebSocketRequest,
    open_websocket_url,
    serve_websocket,
)

from maia.node._websocket import send_text

SENDERS = 12
SIZE = 300_000  # larger than a socket buffer: a send waits, holding the lock


async def test_concurrent_answers_arrive_whole(nursery: trio.Nursery) -> None:
    """Each of twelve concurrent large answers arrives whole, none interleaved."""

    async def handler(request: WebSocketRequest) -> None:
        socket = await request.accept()
        async with trio.open_nursery() as senders:
            for index in range(SENDERS):
                senders.start_soon(send_text, socket, chr(ord("a") + index) * SIZE)
        await socket.get_message()  # until the client says it has read them

    server = await nursery.start(serve_websocket, handler, "127.0.0.1", 0, None)
    url = f"ws://127.0.0.1:{server.port}/"
    with trio.fail_after(60):
        async with open_websocket_url(url, max_message_size=2 * SIZE) as client:
            received = [await client.get_message() for _ in range(SENDERS)]
            await client.send_message("done")
    assert sorted(received) == sorted(chr(ord("a") + i) * SIZE for i in range(SENDERS))


async def test_a_closed_connection_raises_connection_closed(nursery: trio.Nursery) -> None:
    """Once the peer has closed, send_text raises ConnectionClosed (the server ignores it)."""
    outcome: list[BaseException] = []
    closed = trio.Event()

    async def handler(request: WebSocketRequest) -> None:
        socket: WebSocketConnection = await request.accept()
        with pytest.raises(ConnectionClosed):
            await socket.get_message()
        try:
            await send_text(socket, "too late")
        except ConnectionClosed as error:
            outcome.append(error)
        closed.set()

    server = await nursery.start(serve_websocket, handler, "127.0.0.1", 0, None)
    with trio.fail_after(30):
        async with open_websocket_url(f"ws://127.0.0.1:{server.port}/"):
            pass
        await closed.wait()
    assert len(outcome) == 1
