"""The message bound at a real Node (MAX_FRAME_BYTES, 1 MiB), across s7-pipe's reader: a
request of exactly the bound is answered, one byte more fails the connection with Close
1009 (RFC 6455 7.4.1, the spec's limit), whether it arrives in one write or byte-split
writes, and whether its header says so at once or it comes as fragments; the Node serves
on."""

from __future__ import annotations

import contextlib

import orjson
import pytest
import trio

from maia.node._wire import MAX_FRAME_BYTES
from tests.maia.node._raw import client_frame, read_close_code
from tests.maia.node.conftest import LiveNode
from tests.maia.node.test_control_amid_whole import _greeted, _still_serving
from tests.maia.node.test_direct_frames import TEXT, _fragment
from tests.maia.node.test_direct_order import _frames

CONTINUATION = 0x0


def _request_of(size: int) -> bytes:
    """A request text of exactly `size` bytes (an unknown method: answered at once)."""
    empty = orjson.dumps({"id": 1, "method": "no.such_op", "params": {"p": ""}})
    text = orjson.dumps(
        {"id": 1, "method": "no.such_op", "params": {"p": "x" * (size - len(empty))}}
    )
    assert len(text) == size
    return text


async def _send_split(stream: trio.SocketStream, data: bytes, pieces: int) -> None:
    step = max(1, len(data) // pieces)
    for start in range(0, len(data), step):
        await stream.send_all(data[start : start + step])


@pytest.mark.parametrize("pieces", [1, 7])
async def test_a_request_of_exactly_the_bound_is_answered(node: LiveNode, pieces: int) -> None:
    """A 1 MiB request, in one write or seven: answered (unknown_method), once."""
    stream = await _greeted(node)
    async with stream:
        await _send_split(stream, client_frame(TEXT, _request_of(MAX_FRAME_BYTES)), pieces)
        (answer,) = await _frames(stream, 1)
        assert answer["id"] == 1
        assert answer["error"]["code"] == "unknown_method"
    await _still_serving(node)


async def _send_ignoring_reset(stream: trio.SocketStream, data: bytes, pieces: int) -> None:
    with contextlib.suppress(trio.BrokenResourceError):  # the Node closed after its Close
        await _send_split(stream, data, pieces)


@pytest.mark.parametrize("pieces", [1, 7])
async def test_one_byte_over_the_bound_fails_the_connection_with_1009(
    node: LiveNode, pieces: int
) -> None:
    """A request one byte over the bound, in one write or seven, read while it is sent:
    the client reads Close 1009 (no answer)."""
    stream = await _greeted(node)
    frame = client_frame(TEXT, _request_of(MAX_FRAME_BYTES + 1))
    async with stream, trio.open_nursery() as nursery:
        nursery.start_soon(_send_ignoring_reset, stream, frame, pieces)
        assert await read_close_code(stream) == 1009
    await _still_serving(node)


async def test_a_client_that_writes_the_oversize_frame_before_reading_reads_1009(
    node: LiveNode,
) -> None:
    """A request one byte over the bound, written whole (the write may fail with a reset:
    the Node closed with the rest unread), then read: the Close 1009 is still there."""
    stream = await _greeted(node)
    async with stream:
        await _send_ignoring_reset(stream, client_frame(TEXT, _request_of(MAX_FRAME_BYTES + 1)), 1)
        await trio.sleep(0.2)  # the Node has read the header and answered
        assert await read_close_code(stream) == 1009
    await _still_serving(node)


async def test_fragments_over_the_bound_fail_the_connection_with_1009(node: LiveNode) -> None:
    """A message of three fragments, each under the bound, together one byte over it: Close
    1009, no answer."""
    text = _request_of(MAX_FRAME_BYTES + 1)
    third = len(text) // 3
    frames = (
        _fragment(TEXT, text[:third])
        + _fragment(CONTINUATION, text[third : 2 * third])
        + client_frame(CONTINUATION, text[2 * third :])
    )
    stream = await _greeted(node)
    async with stream:
        await stream.send_all(frames)
        assert await read_close_code(stream) == 1009
    await _still_serving(node)
