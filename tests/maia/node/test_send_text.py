"""The API's answer write (`send_text`) over real loopback WebSockets: an answer the socket
takes whole goes out with no schedule point, one it cannot take goes out whole after the
reader drains, frames sent at once never interleave, and a closed peer is ConnectionClosed."""

from __future__ import annotations

import socket

import pytest
import trio
import trio.testing
from trio_websocket import (
    ConnectionClosed,
    WebSocketConnection,
    WebSocketRequest,
    open_websocket_url,
    serve_websocket,
)

from maia.node._websocket import send_text

BIG = 16 * 1024 * 1024  # past loopback's socket buffers (4 + 6 MiB at most): it must wait


Accepted = trio.MemoryReceiveChannel[WebSocketConnection]


async def _server(nursery: trio.Nursery) -> tuple[int, Accepted]:
    """A trio-websocket server on 127.0.0.1 handing each accepted connection to the test."""
    send, receive = trio.open_memory_channel[WebSocketConnection](1)

    async def handler(request: WebSocketRequest) -> None:
        connection = await request.accept()
        await send.send(connection)
        await trio.sleep_forever()

    server = await nursery.start(
        lambda task_status: serve_websocket(
            handler, "127.0.0.1", 0, ssl_context=None, max_message_size=2 * BIG,
            task_status=task_status,
        )
    )  # fmt: skip
    return server.port, receive


async def test_a_small_answer_is_written_without_a_schedule_point() -> None:
    """A short answer on an idle connection goes out inside the call (no other task runs
    meanwhile), and the client reads it whole."""
    with trio.fail_after(20):
        async with trio.open_nursery() as nursery:
            port, accepted = await _server(nursery)
            async with open_websocket_url(f"ws://127.0.0.1:{port}/") as client:
                server_side = await accepted.receive()
                ran: list[int] = []

                async def mark() -> None:
                    ran.append(1)

                nursery.start_soon(mark)  # runs at this task's next schedule point
                await send_text(server_side, '{"id":1,"ok":true}')
                assert ran == []  # no schedule point was taken
                assert await client.get_message() == '{"id":1,"ok":true}'
            nursery.cancel_scope.cancel()


async def test_answers_the_socket_cannot_take_go_out_whole_and_in_order() -> None:
    """Two 16 MiB answers and a short one, sent at once to a client that takes no message
    yet: the second cannot leave and the third waits behind it; once the client reads, each
    arrives whole and in the order sent."""
    first, second, third = "a" * BIG, "b" * BIG, "c"
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            port, accepted = await _server(nursery)
            async with open_websocket_url(
                f"ws://127.0.0.1:{port}/", max_message_size=2 * BIG, message_queue_size=0
            ) as client:
                server_side = await accepted.receive()
                done: list[str] = []

                async def send(text: str) -> None:
                    await send_text(server_side, text)
                    done.append(text[0])

                async with trio.open_nursery() as senders:
                    senders.start_soon(send, first)
                    await trio.testing.wait_all_tasks_blocked()
                    senders.start_soon(send, second)
                    await trio.testing.wait_all_tasks_blocked()
                    senders.start_soon(send, third)
                    await trio.testing.wait_all_tasks_blocked()
                    assert "b" not in done  # nothing taken: it waits
                    assert "c" not in done  # behind it
                    received = [await client.get_message() for _ in range(3)]
                assert [len(text) for text in received] == [BIG, BIG, 1]
                assert received == [first, second, third]
                assert done == ["a", "b", "c"]
            nursery.cancel_scope.cancel()


async def test_an_answer_to_a_closed_connection_is_connection_closed() -> None:
    """Once the client closed, and when the socket cannot be written (shut down under it),
    an answer raises ConnectionClosed, never a socket error."""
    with trio.fail_after(20):
        async with trio.open_nursery() as nursery:
            port, accepted = await _server(nursery)
            async with open_websocket_url(f"ws://127.0.0.1:{port}/"):
                closed_by_peer = await accepted.receive()
            with pytest.raises(ConnectionClosed):
                await send_text(closed_by_peer, "x")
            async with open_websocket_url(f"ws://127.0.0.1:{port}/") as client:
                server_side = await accepted.receive()
                stream = server_side._stream
                assert isinstance(stream, trio.SocketStream)
                with socket.fromfd(
                    stream.socket.fileno(), socket.AF_INET, socket.SOCK_STREAM
                ) as dup:
                    dup.shutdown(socket.SHUT_WR)  # behind trio's back: the write fails, EPIPE
                with pytest.raises(ConnectionClosed):
                    await send_text(server_side, "x")
                assert server_side.closed is not None
                await trio.aclose_forcefully(client._stream)  # its close handshake cannot end
            nursery.cancel_scope.cancel()
