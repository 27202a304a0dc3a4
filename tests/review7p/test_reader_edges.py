"""s7-pipe's own socket reads in the API reader (`DirectConnection._reader_task`,
`_websocket._receive`) at a real Node on loopback: a peer that half-closes or resets in the
middle of a frame or of its handshake ends its own connection only, many connections that
open and close leave no file descriptor behind, and a peer that stops reading its answers
stalls only itself."""

from __future__ import annotations

import os
import socket
import struct

import trio

from tests.maia.node._raw import client_frame, upgrade_request
from tests.maia.node.conftest import LiveNode
from tests.maia.node.test_control_amid_whole import _greeted, _still_serving
from tests.maia.node.test_direct_frames import TEXT
from tests.maia.node.test_direct_order import _frames, _unknown


def _fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def _tasks() -> int:
    """The trio tasks alive in this run (the Node's among them)."""
    root = trio.lowlevel.current_root_task()
    assert root is not None
    count, stack = 0, [root]
    while stack:
        task = stack.pop()
        count += 1
        stack += [child for nursery in task.child_nurseries for child in nursery.child_tasks]
    return count


def _reset(stream: trio.SocketStream) -> None:
    stream.socket.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))


async def _ended(stream: trio.SocketStream) -> bytes:
    """What the Node sends until it closes TCP (bounded)."""
    data = b""
    with trio.fail_after(20):
        while chunk := await stream.receive_some(65536):
            data += chunk
            assert len(data) < 1 << 20
    return data


async def test_a_half_close_in_the_middle_of_a_frame_ends_that_connection(
    node: LiveNode,
) -> None:
    """A request answered, then half of the next frame and FIN (SHUT_WR): the Node closes
    the connection (no answer to the cut frame) and serves another."""
    stream = await _greeted(node)
    await stream.send_all(client_frame(TEXT, _unknown(1)))
    assert [frame["id"] for frame in await _frames(stream, 1)] == [1]
    whole = client_frame(TEXT, _unknown(2))
    await stream.send_all(whole[: len(whole) // 2])
    await stream.send_eof()
    rest = await _ended(stream)
    assert b'"id":2' not in rest
    await stream.aclose()
    await _still_serving(node)


async def test_a_reset_in_the_middle_of_a_frame_ends_that_connection_only(
    node: LiveNode,
) -> None:
    """Half of a frame (only its header and mask), then RST: that connection ends, the Node
    serves another."""
    stream = await _greeted(node)
    await stream.send_all(client_frame(TEXT, _unknown(1))[:6])
    await trio.sleep(0.2)  # the Node reads the partial frame and waits for the rest
    _reset(stream)
    await stream.aclose()
    await _still_serving(node)


async def test_a_peer_that_leaves_mid_handshake_ends_that_connection_only(
    node: LiveNode,
) -> None:
    """Half of an upgrade request then FIN, and half of one then RST: the Node serves on."""
    request = upgrade_request(node.port, {"Host": f"127.0.0.1:{node.port}"})
    for reset in (False, True):
        stream = await trio.open_tcp_stream("127.0.0.1", node.port)
        await stream.send_all(request[: len(request) // 2])
        await trio.sleep(0.1)
        if reset:
            _reset(stream)
        else:
            await stream.send_eof()
            await _ended(stream)
        await stream.aclose()
    await _still_serving(node)


async def _churn_once(node: LiveNode, kind: int) -> None:
    stream = await _greeted(node)
    whole = client_frame(TEXT, _unknown(1))
    if kind == 0:  # a request answered, then a FIN
        await stream.send_all(whole)
        await _frames(stream, 1)
        await stream.send_eof()
        await _ended(stream)
    elif kind == 1:  # half a frame, then RST
        await stream.send_all(whole[:5])
        _reset(stream)
    elif kind == 2:  # a request and a Close in one write, the Close echoed, then FIN
        close = client_frame(0x8, struct.pack("!H", 1000))
        await stream.send_all(whole + close)
        await _ended(stream)
    else:  # a request then RST without reading its answer
        await stream.send_all(whole)
        _reset(stream)
    await stream.aclose()


async def test_many_connections_opening_and_closing_leave_no_descriptor(
    node: LiveNode,
) -> None:
    """160 connections each ending another way (FIN, RST mid-frame, Close, RST with an answer
    unread), 8 at a time: once they are gone the Node holds no more descriptors and no more
    trio tasks than before, and serves on."""
    await _still_serving(node)
    await trio.sleep(0.5)  # the probe's connection closed on the Node's side too
    before, tasks_before = _fds(), _tasks()

    async def churn(lane: int) -> None:
        for index in range(20):
            await _churn_once(node, (lane + index) % 4)

    with trio.fail_after(120):
        async with trio.open_nursery() as nursery:
            for lane in range(8):
                nursery.start_soon(churn, lane)
    with trio.fail_after(30):
        while _fds() > before:  # noqa: ASYNC110 (polling /proc: no event to wait on)
            await trio.sleep(0.05)
    assert _fds() <= before
    with trio.fail_after(30):
        while _tasks() > tasks_before:  # noqa: ASYNC110 (no event to wait on)
            await trio.sleep(0.05)
    await _still_serving(node)


async def test_a_peer_that_stops_reading_stalls_only_itself(node: LiveNode) -> None:
    """A peer writes 8 MiB of requests and reads none of the answers: the Node stops
    reading it once its answers fill the socket (backpressure), and another connection is
    served meanwhile; after the stalled peer resets, the Node still serves."""
    stalled = await _greeted(node)
    batch = b"".join(client_frame(TEXT, _unknown(i)) for i in range(1000))
    written = 0
    with trio.move_on_after(10):  # until the Node stops taking our bytes
        while written < 8 << 20:
            await stalled.send_all(batch)
            written += len(batch)
    await _still_serving(node)
    _reset(stalled)
    await stalled.aclose()
    await _still_serving(node)
