"""Requests the reader task hands straight to the connection (`DirectConnection`) are
handled in the order they were sent, against a real Node on loopback: pipelined after a
hello, after a fragmented hello (which goes through trio-websocket's channel) and a ping,
and after a refused request. (Answers to requests that wait go out as they finish, so the
tests match answers by id.)"""

from __future__ import annotations

from typing import Any

import orjson
import trio

from maia.protocol import PROTOCOL_VERSION, REGISTRY

from ._raw import client_frame, upgrade_to_api, whole_server_frames
from .conftest import LiveNode

TEXT, CONTINUATION, PING = 0x1, 0x0, 0x9


def _hello(request_id: int) -> bytes:
    params = {"protocol": PROTOCOL_VERSION, "registryDigest": REGISTRY.digest}
    return orjson.dumps({"id": request_id, "method": "node.hello", "params": params})


def _status(request_id: int) -> bytes:
    return orjson.dumps({"id": request_id, "method": "node.status", "params": {}})


def _fragment(opcode: int, payload: bytes) -> bytes:
    """A client frame without FIN (the first or a middle part of a message)."""
    frame = bytearray(client_frame(opcode, payload))
    frame[0] &= 0x7F
    return bytes(frame)


async def _answers(stream: trio.SocketStream, count: int) -> list[dict[str, Any]]:
    """The next `count` text answers the Node sends (unmasked server frames)."""
    data, answers = b"", []
    with trio.fail_after(20):
        while True:
            frames, data = whole_server_frames(data)  # every whole frame read so far
            answers += [orjson.loads(payload) for opcode, payload in frames if opcode == TEXT]
            if len(answers) >= count:
                return answers
            chunk = await stream.receive_some(65536)
            assert chunk, "the Node closed the connection"
            data += chunk


async def _connected(node: LiveNode) -> trio.SocketStream:
    """A TCP stream to `node` upgraded to the API socket (no hello yet)."""
    stream = await trio.open_tcp_stream("127.0.0.1", node.port)
    await upgrade_to_api(stream, node.port, node.token)
    return stream


async def test_requests_pipelined_after_a_hello_see_it_done(node: LiveNode) -> None:
    """A hello and three status requests in one write: the hello first, then all three
    ok (handled after it, not hello_required)."""
    stream = await _connected(node)
    async with stream:
        frames = [_hello(1), _status(2), _status(3), _status(4)]
        await stream.send_all(b"".join(client_frame(TEXT, frame) for frame in frames))
        answers = await _answers(stream, 4)
    assert (answers[0]["id"], answers[0]["ok"]) == (1, True)
    assert sorted((answer["id"], answer["ok"]) for answer in answers[1:]) == [
        (2, True),
        (3, True),
        (4, True),
    ]


async def test_a_fragmented_hello_is_handled_before_the_whole_request_after_it(
    node: LiveNode,
) -> None:
    """A hello in two fragments (through trio-websocket's channel), a ping, then a whole
    status request, in one write: the status is handled after the hello (ok, not
    hello_required), and a later whole request on the same connection too."""
    stream = await _connected(node)
    async with stream:
        hello = _hello(1)
        frames = (
            _fragment(TEXT, hello[:10])
            + client_frame(CONTINUATION, hello[10:])
            + client_frame(PING, b"p")
            + client_frame(TEXT, _status(2))
        )
        await stream.send_all(frames)
        first = await _answers(stream, 2)
        await stream.send_all(client_frame(TEXT, _status(3)))
        later = await _answers(stream, 1)
    assert [(answer["id"], answer["ok"]) for answer in first + later] == [
        (1, True),
        (2, True),
        (3, True),
    ]


async def test_a_request_before_the_hello_is_refused_and_the_hello_after_it_works(
    node: LiveNode,
) -> None:
    """A status before any hello, then a hello and a status, in one write: hello_required,
    then ok, ok (the refusal changes nothing for the frames after it)."""
    stream = await _connected(node)
    async with stream:
        frames = [_status(1), _hello(2), _status(3)]
        await stream.send_all(b"".join(client_frame(TEXT, frame) for frame in frames))
        answers = await _answers(stream, 3)
    assert answers[0]["id"] == 1
    assert answers[0]["error"]["code"] == "hello_required"
    assert (answers[1]["id"], answers[1]["ok"]) == (2, True)
    assert (answers[2]["id"], answers[2]["ok"]) == (3, True)
