"""Per-connection order over a real Node on loopback when fragmented requests (trio-websocket's
channel) and whole ones (handed over by the reader task, `DirectConnection`) arrive mixed in
one write, beside requests whose answers go out from tasks of their own: the answers given at
once keep request order, every request is answered once, and every frame the Node writes is
a whole, well-formed text frame (none lost, none interleaved mid-frame).

The direct hand-over must stop once a message goes through the channel (`direct = False`):
otherwise the whole request after a fragmented one can be handled by the reader task before
the connection's task has woken for the fragmented one. trio runs a batch of woken tasks in
either order, so each fragmented/whole pair below has about an even chance of showing that;
many pairs make a missed guard all but certain to fail the test."""

from __future__ import annotations

from typing import Any

import orjson
import trio

from ._raw import client_frame
from .conftest import LiveNode
from .test_direct_frames import CONTINUATION, PING, TEXT, _connected, _fragment, _hello

PONG = 0xA
PAIRS = 60  # fragmented/whole pairs per write: a missed guard goes unseen with odds ~2**-60
ROUNDS = 3  # writes per connection


def _unknown(request_id: int) -> bytes:
    """A request answered at once (`unknown_method` from `Dispatcher.begin`)."""
    return orjson.dumps({"id": request_id, "method": "no.such_op", "params": {}})


def _waiting(request_id: int) -> bytes:
    """A request whose answer comes from a task of its own (an async handler: Pending)."""
    return orjson.dumps({"id": request_id, "method": "session.list", "params": {}})


def _fragmented(payload: bytes) -> bytes:
    """`payload` as a text message in three frames (first, continuation, final)."""
    third = max(1, len(payload) // 3)
    return (
        _fragment(TEXT, payload[:third])
        + _fragment(CONTINUATION, payload[third : 2 * third])
        + client_frame(CONTINUATION, payload[2 * third :])
    )


async def _frames(stream: trio.SocketStream, count: int) -> list[dict[str, Any]]:
    """The next `count` text frames the Node sends (pongs to our pings skipped), each checked
    whole and well-formed: FIN set, no RSV bits, unmasked, text, a JSON object with an id
    (a frame written into the middle of another breaks one of these)."""
    data, frames = b"", list[dict[str, Any]]()
    with trio.fail_after(60):
        while len(frames) < count:
            while len(data) >= 2:
                first, second = data[0], data[1]
                length, start = second & 0x7F, 2
                if length == 126:
                    if len(data) < 4:
                        break
                    length, start = int.from_bytes(data[2:4]), 4
                elif length == 127:
                    if len(data) < 10:
                        break
                    length, start = int.from_bytes(data[2:10]), 10
                if len(data) < start + length:
                    break
                assert not second & 0x80, "a server frame is never masked"
                payload = data[start : start + length]
                data = data[start + length :]
                if first == 0x80 | PONG:
                    assert payload == b"p", "a pong echoes its ping"
                    continue
                assert first == 0x80 | TEXT, f"not a whole text frame: {first:#x}"
                frame = orjson.loads(payload)
                assert isinstance(frame, dict), frame
                assert "id" in frame, frame
                frames.append(frame)
            if len(frames) >= count:
                break
            chunk = await stream.receive_some(65536)
            assert chunk, "the Node closed the connection"
            data += chunk
    assert data == b"", "bytes after the last expected frame"
    return frames


async def test_answers_given_at_once_keep_request_order_across_fragmented_and_whole(
    node: LiveNode,
) -> None:
    """Rounds of 60 (fragmented, whole) request pairs in one write, a ping and a request
    answered from its own task in between: the at-once answers come in request order, each
    waiting request is answered once, and every frame is whole and well-formed."""
    stream = await _connected(node)
    async with stream:
        await stream.send_all(client_frame(TEXT, _hello(0)))
        assert (await _frames(stream, 1))[0]["ok"] is True
        next_id = 1
        for _ in range(ROUNDS):
            at_once: list[int] = []
            waiting: list[int] = []
            data = b""
            for pair in range(PAIRS):
                first, second = next_id, next_id + 1
                next_id += 2
                data += _fragmented(_unknown(first)) + client_frame(TEXT, _unknown(second))
                at_once += [first, second]
                if pair % 10 == 5:
                    data += client_frame(PING, b"p") + client_frame(TEXT, _waiting(next_id))
                    waiting.append(next_id)
                    next_id += 1
            await stream.send_all(data)
            frames = await _frames(stream, len(at_once) + len(waiting))
            seen = [frame["id"] for frame in frames]
            assert sorted(seen) == sorted(at_once + waiting), "a request unanswered or twice"
            assert [id_ for id_ in seen if id_ in set(at_once)] == at_once
            for frame in frames:
                if frame["id"] in set(at_once):
                    assert frame["error"]["code"] == "unknown_method", frame
                else:
                    assert frame["ok"] is True, frame
