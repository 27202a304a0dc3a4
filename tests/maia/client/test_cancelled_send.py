"""A request whose caller is cancelled while its frame is half-written, against a real
WebSocket server on loopback that has stopped reading (small socket buffers, so a 900 KB
frame cannot leave whole): the SDK closes the connection rather than let a later frame
follow the half-written one. The server reads the cut frame and then end of stream, no
other frame after it; the next call fails at once with `unavailable` naming the cut, not
a garbled answer or a hang. The blocking client alike, for a send cut by its timeout."""

from __future__ import annotations

import socket

import anyio.abc
import pytest
import trio
import trio.testing
from wsproto import ConnectionType, WSConnection

from maia.client import connect_sync, open_client
from maia.protocol import MaiaError

from ._greeting import greet

SMALL_BUFFER = 4096
BIG_TEXT = "a" * 900_000  # under the 1 MiB bound, far over what the buffers hold


class StallingServer:
    """One connection: the upgrade and the hello answered, then nothing read until
    `release` is set; then every byte until end of stream is kept in `after_hello`."""

    def __init__(self) -> None:
        self.release = trio.Event()
        self.after_hello = bytearray()
        self.ended = trio.Event()
        self.port = 0

    async def serve(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        listener = (await trio.open_tcp_listeners(0, host="127.0.0.1"))[0]
        listener.socket.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, SMALL_BUFFER)
        self.port = listener.socket.getsockname()[1]
        task_status.started()
        async with listener:
            stream = await listener.accept()
        async with stream:
            with trio.fail_after(10):
                await greet(stream, WSConnection(ConnectionType.SERVER))
            await self.release.wait()
            with trio.fail_after(20):
                while chunk := await stream.receive_some(65536):
                    self.after_hello += chunk
        self.ended.set()


def _first_frame_length(data: bytes) -> tuple[int, int]:
    """(header size with mask, payload length) of the masked client frame `data` opens."""
    assert data[0] == 0x81, "a whole text frame's first byte"
    assert data[1] == 0x80 | 127, "a masked frame with a 64-bit length"
    return 14, int.from_bytes(data[2:10], "big")


async def test_a_send_cancelled_mid_frame_closes_the_connection(nursery: trio.Nursery) -> None:
    """Cancelled while its 900 KB frame is half-written: the server gets part of that frame
    then end of stream (nothing after it), and the next request raises `unavailable`
    saying a send was cut off, without waiting."""
    server = StallingServer()
    await nursery.start(server.serve)
    url = f"ws://127.0.0.1:{server.port}/api/v1"
    async with open_client(url, token="0" * 64) as client:
        transport = client._socket
        assert transport is not None
        raw = transport._stream.extra(anyio.abc.SocketAttribute.raw_socket)
        raw.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SMALL_BUFFER)
        cancelled = trio.CancelScope()

        async def big_request() -> None:
            with cancelled:
                await client.request("no.such_op", {"text": BIG_TEXT})

        async with trio.open_nursery() as inner:
            inner.start_soon(big_request)
            await trio.testing.wait_all_tasks_blocked()  # its write waits: the frame is cut
            cancelled.cancel()
        assert cancelled.cancelled_caught
        with trio.fail_after(10), pytest.raises(MaiaError) as caught:
            await client.request("node.status")
        assert caught.value.code == "unavailable"
        assert "mid-frame" in caught.value.message
        server.release.set()
        with trio.fail_after(20):
            await server.ended.wait()
    data = bytes(server.after_hello)
    header, length = _first_frame_length(data)
    assert length > len(BIG_TEXT)
    assert 0 < len(data) - header < length, "the frame was cut, and nothing followed it"


async def test_a_blocking_send_cut_by_its_timeout_closes_the_connection(
    nursery: trio.Nursery,
) -> None:
    """The blocking client's 900 KB frame does not leave within its 1 s timeout (the server
    reads nothing): that call and the next raise `unavailable` naming the cut, and the
    server gets part of the frame then end of stream."""
    server = StallingServer()
    await nursery.start(server.serve)
    url = f"ws://127.0.0.1:{server.port}/api/v1"

    def two_calls() -> list[MaiaError]:
        errors = []
        with connect_sync(url, token="0" * 64, timeout_s=1.0) as client:
            assert client._socket is not None
            client._socket.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SMALL_BUFFER)
            for params in ({"text": BIG_TEXT}, {}):
                try:
                    client.request("no.such_op", params)
                except MaiaError as error:
                    errors.append(error)
        return errors

    with trio.fail_after(20):
        errors = await trio.to_thread.run_sync(two_calls)
        server.release.set()
        await server.ended.wait()
    assert [error.code for error in errors] == ["unavailable", "unavailable"]
    assert all("mid-frame" in error.message for error in errors)
    data = bytes(server.after_hello)
    header, length = _first_frame_length(data)
    assert 0 < len(data) - header < length, "the frame was cut, and nothing followed it"
