"""Control frames and broken frames arriving in the same write as whole requests (the reader
task's direct hand-over, `DirectConnection`), at a real Node on loopback: a ping between
requests is answered in place, a Close ends the connection after the requests before it are
answered and before the ones after it are read; an unmasked frame (1002), a frame announcing
more than the bound (1009) and invalid UTF-8 (1007) after whole requests close the
connection with their code; the Node serves another connection after each."""

from __future__ import annotations

import struct

import orjson
import pytest
import trio

from maia.node._wire import MAX_FRAME_BYTES

from ._raw import client_frame
from .conftest import LiveNode
from .test_direct_frames import PING, TEXT, _connected, _hello, _status
from .test_direct_order import _frames, _unknown

CLOSE, PONG = 0x8, 0xA


async def _until_eof(stream: trio.SocketStream) -> list[tuple[int, bytes]]:
    """Every frame (opcode, payload) the Node sends until it closes TCP."""
    data, frames = b"", list[tuple[int, bytes]]()
    with trio.fail_after(30):
        while chunk := await stream.receive_some(65536):
            data += chunk
    while data:
        first, length, start = data[0], data[1] & 0x7F, 2
        if length == 126:
            length, start = int.from_bytes(data[2:4]), 4
        elif length == 127:
            length, start = int.from_bytes(data[2:10]), 10
        assert first & 0x80, "a whole frame (FIN)"
        assert len(data) >= start + length, "a frame cut short"
        frames.append((first & 0x0F, data[start : start + length]))
        data = data[start + length :]
    return frames


async def _greeted(node: LiveNode) -> trio.SocketStream:
    """A connection whose hello is answered: its task now waits for the next request, so
    the reader task hands whole requests over directly."""
    stream = await _connected(node)
    await stream.send_all(client_frame(TEXT, _hello(0)))
    assert (await _frames(stream, 1))[0]["ok"] is True
    return stream


async def _still_serving(node: LiveNode) -> None:
    stream = await _connected(node)
    async with stream:
        await stream.send_all(client_frame(TEXT, _hello(1)) + client_frame(TEXT, _status(2)))
        with trio.fail_after(20):
            data = b""
            while data.count(b'"ok":true') < 2:
                chunk = await stream.receive_some(65536)
                assert chunk, "the Node closed a healthy connection"
                data += chunk


async def test_a_ping_and_a_close_amid_whole_requests(node: LiveNode) -> None:
    """After the hello, request 1, ping, request 2, Close 1000, request 3 in one write: the
    answers to 1 and 2 with the pong between them, then the Close echoed; 3 is never read.
    (Had the requests gone through trio-websocket's channel, answers the connection's task
    had not written when the Close was read would be dropped: it refuses sends after it.)"""
    stream = await _greeted(node)
    async with stream:
        await stream.send_all(
            client_frame(TEXT, _unknown(1))
            + client_frame(PING, b"p")
            + client_frame(TEXT, _unknown(2))
            + client_frame(CLOSE, struct.pack("!H", 1000))
            + client_frame(TEXT, _unknown(3))
        )
        frames = await _until_eof(stream)
    shown = [
        (opcode, orjson.loads(payload)["id"] if opcode == TEXT else payload)
        for opcode, payload in frames
    ]
    assert shown == [
        (TEXT, 1),
        (PONG, b"p"),
        (TEXT, 2),
        (CLOSE, struct.pack("!H", 1000)),
    ]
    await _still_serving(node)


def _unmasked(payload: bytes) -> bytes:
    return struct.pack("!BB", 0x80 | TEXT, len(payload)) + payload


@pytest.mark.parametrize(
    ("broken", "code"),
    [
        (_unmasked(_unknown(9)), 1002),
        (client_frame(TEXT, b"", announce=MAX_FRAME_BYTES + 1), 1009),
        (client_frame(TEXT, b'{"id":9,"method":"\xff"}'), 1007),
    ],
    ids=["unmasked", "over-the-bound", "invalid-utf-8"],
)
async def test_a_broken_frame_after_whole_requests_closes_with_its_code(
    node: LiveNode, broken: bytes, code: int
) -> None:
    """Whole requests then a broken frame in one write: the Node's last frame is a Close
    with the broken frame's code, every frame before it whole; others are served after."""
    stream = await _greeted(node)
    async with stream:
        await stream.send_all(
            client_frame(TEXT, _unknown(1)) + client_frame(TEXT, _unknown(2)) + broken
        )
        frames = await _until_eof(stream)
    assert frames[-1][0] == CLOSE
    assert int.from_bytes(frames[-1][1][:2]) == code
    assert all(opcode == TEXT for opcode, _ in frames[:-1])
    await _still_serving(node)


async def test_a_ping_then_a_close_in_one_write_leaves_the_node_serving(node: LiveNode) -> None:
    """A ping and a Close in one write (the Close parsed before the ping is answered): the
    connection ends with the Close echoed, and the Node serves another connection."""
    stream = await _greeted(node)
    async with stream:
        await stream.send_all(
            client_frame(PING, b"p") + client_frame(CLOSE, struct.pack("!H", 1000))
        )
        frames = await _until_eof(stream)
    await _still_serving(node)
    assert frames[-1] == (CLOSE, struct.pack("!H", 1000))
