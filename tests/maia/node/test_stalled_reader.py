"""A client that stops reading its answers, at a real Node on loopback: the Node's writes
to it wait (`send_text` falls back to the stream under the send lock), its reading of that
client's requests stops (bounded: TCP pushes back instead of a queue growing), and another
client is served meanwhile; once the first reads again, every answer arrives whole,
well-formed and in request order. (A frame the socket takes in part is
tests/maia/node/test_send_text.py's 16 MiB case.)"""

from __future__ import annotations

import socket

import orjson
import trio

from ._raw import client_frame, upgrade_to_api
from .conftest import LiveNode
from .test_direct_frames import TEXT, _connected, _hello, _status
from .test_direct_order import _frames

ID = "x" * 120  # a long id: answers of ~200 bytes
CHUNK = 400  # requests per write
MAX_CHUNKS = 300  # at most ~120k requests (~8 MiB), even if the Node never pushed back


def _request(number: int) -> bytes:
    """A request answered at once (`unknown_method`), its id naming its place."""
    payload = {"id": f"{ID}{number}", "method": "no.such_op", "params": {}}
    return client_frame(TEXT, orjson.dumps(payload))


async def _stalled_client(node: LiveNode) -> trio.SocketStream:
    """A connection whose receive buffer is small, so the Node's answers back up quickly."""
    sock = trio.socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    await sock.connect(("127.0.0.1", node.port))
    stream = trio.SocketStream(sock)
    await upgrade_to_api(stream, node.port, node.token)
    return stream


async def test_a_client_that_stops_reading_holds_up_only_itself(node: LiveNode) -> None:
    """Requests written until the Node stops taking them (its answers back up), then another
    connection's hello and status are answered; the stalled client then gets every answer,
    whole and in order."""
    stalled = await _stalled_client(node)
    async with stalled:
        await stalled.send_all(client_frame(TEXT, _hello(0)))
        assert (await _frames(stalled, 1))[0]["ok"] is True
        written, pushed_back, unsent = 0, False, b""
        for chunk in range(MAX_CHUNKS):
            unsent = b"".join(_request(chunk * CHUNK + n) for n in range(CHUNK))
            while unsent:
                with trio.move_on_after(1):  # a single send: nothing leaves if cancelled
                    unsent = unsent[await stalled.socket.send(unsent) :]
                    continue
                pushed_back = True
                break
            written += CHUNK
            if pushed_back:
                break
        assert pushed_back, "the Node kept reading requests it could not answer"

        other = await _connected(node)
        async with other:
            await other.send_all(client_frame(TEXT, _hello(1)) + client_frame(TEXT, _status(2)))
            answers = await _frames(other, 2)
        assert [(answer["id"], answer["ok"]) for answer in answers] == [(1, True), (2, True)]

        async with trio.open_nursery() as nursery:
            nursery.start_soon(stalled.send_all, unsent)
            frames = await _frames(stalled, written)
    assert [frame["id"] for frame in frames] == [f"{ID}{n}" for n in range(written)]
    assert {frame["error"]["code"] for frame in frames} == {"unknown_method"}
