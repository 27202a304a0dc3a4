"""The API reader's own socket reads (`DirectConnection._reader_task`), at a real Node on
loopback: a peer that resets its connection (RST) mid-conversation ends that connection
only, and requests sent in separate writes while the Node is busy are all answered."""

from __future__ import annotations

import socket
import struct

import trio

from ._raw import client_frame
from .conftest import LiveNode
from .test_control_amid_whole import _greeted, _still_serving
from .test_direct_frames import TEXT
from .test_direct_order import _frames, _unknown


async def test_a_peer_that_resets_its_connection_ends_it_alone(node: LiveNode) -> None:
    """After the hello and a request, the peer closes with RST (SO_LINGER 0): the Node's
    read fails with a reset, that connection ends, and another is served."""
    stream = await _greeted(node)
    await stream.send_all(client_frame(TEXT, _unknown(1)))
    assert [frame["id"] for frame in await _frames(stream, 1)] == [1]
    stream.socket.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    await stream.aclose()  # RST, not FIN
    await _still_serving(node)


async def test_requests_in_separate_writes_are_all_answered_in_order(node: LiveNode) -> None:
    """Forty requests each in a write of its own, sent without waiting: every one answered
    once, in order (what arrived while the Node was busy is read in one go)."""
    stream = await _greeted(node)
    async with stream:
        for request_id in range(1, 41):
            await stream.send_all(client_frame(TEXT, _unknown(request_id)))
        with trio.fail_after(30):
            answers = await _frames(stream, 40)
    assert [answer["id"] for answer in answers] == list(range(1, 41))
    await _still_serving(node)
