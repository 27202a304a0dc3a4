"""Whole requests that share one socket read with an invalid frame, at a real Node on
loopback: every request before the invalid frame is answered, in order, and then the
connection is failed as docs/node.md says for that kind of frame (a Close with 1002 for a
malformed frame, 1007 for a text frame that is not UTF-8, 1009 for a header announcing more
than the bound; then TCP closed), whether the requests were handed over by the reader task
(after the hello) or went through trio-websocket's channel (before it); the Node serves
another connection after each."""

from __future__ import annotations

import struct

import orjson
import pytest

from maia.node._wire import MAX_FRAME_BYTES

from ._raw import client_frame
from .conftest import LiveNode
from .test_control_amid_whole import CLOSE, _greeted, _still_serving, _until_eof
from .test_direct_frames import PING, TEXT, _connected, _hello, _status
from .test_direct_order import _unknown


def _unmasked(payload: bytes) -> bytes:
    return struct.pack("!BB", 0x80 | TEXT, len(payload)) + payload


BROKEN = [
    (_unmasked(_unknown(9)), 1002),
    (client_frame(0x3, b"reserved opcode"), 1002),
    (client_frame(TEXT, b"", announce=MAX_FRAME_BYTES + 1), 1009),
    (client_frame(TEXT, b'{"id":9,"method":"\xff"}'), 1007),
]
IDS = ["unmasked", "reserved-opcode", "over-the-bound", "invalid-utf-8"]


def _shown(frames: list[tuple[int, bytes]]) -> list[object]:
    """Each frame as its answer's id (text) or (opcode, close code)."""
    return [
        orjson.loads(payload)["id"]
        if opcode == TEXT
        else (opcode, int.from_bytes(payload[:2]) if opcode == CLOSE else payload)
        for opcode, payload in frames
    ]


@pytest.mark.parametrize(("broken", "code"), BROKEN, ids=IDS)
async def test_requests_before_an_invalid_frame_are_answered_in_order(
    node: LiveNode, broken: bytes, code: int
) -> None:
    """After the hello, requests 1 and 3 answered at once, 2 from a task of its own
    (node.status), a ping and 4, then the invalid frame and 5, in one write: 1, 3, the pong
    and 4 in order, 2's answer among them, then a Close with the frame's code and nothing
    else; 5 is never read."""
    stream = await _greeted(node)
    async with stream:
        await stream.send_all(
            client_frame(TEXT, _unknown(1))
            + client_frame(TEXT, _status(2))
            + client_frame(TEXT, _unknown(3))
            + client_frame(PING, b"p")
            + client_frame(TEXT, _unknown(4))
            + broken
            + client_frame(TEXT, _unknown(5))
        )
        frames = await _until_eof(stream)
    shown = _shown(frames)
    assert shown[-1] == (CLOSE, code)
    assert sorted(shown[:-1], key=str) == sorted([1, 2, 3, (0xA, b"p"), 4], key=str)
    assert [frame for frame in shown if frame != 2] == [1, 3, (0xA, b"p"), 4, (CLOSE, code)]
    await _still_serving(node)


@pytest.mark.parametrize(("broken", "code"), BROKEN, ids=IDS)
async def test_requests_queued_before_the_hello_are_answered_before_the_close(
    node: LiveNode, broken: bytes, code: int
) -> None:
    """The hello, two requests and the invalid frame in the connection's first write (the
    requests wait in trio-websocket's channel while the hello runs): the hello and both
    requests are answered in order, then the Close with the frame's code."""
    stream = await _connected(node)
    async with stream:
        await stream.send_all(
            client_frame(TEXT, _hello(0))
            + client_frame(TEXT, _unknown(1))
            + client_frame(TEXT, _status(2))
            + broken
        )
        frames = await _until_eof(stream)
    assert _shown(frames) == [0, 1, 2, (CLOSE, code)]
    await _still_serving(node)


async def test_an_invalid_frame_alone_still_closes_with_its_code(node: LiveNode) -> None:
    """An invalid frame in a read of its own, with nothing before it: the Close with 1007 at
    once, as before."""
    stream = await _greeted(node)
    async with stream:
        await stream.send_all(client_frame(TEXT, b"\xff\xfe"))
        frames = await _until_eof(stream)
    assert _shown(frames) == [(CLOSE, 1007)]
    await _still_serving(node)
