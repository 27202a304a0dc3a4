"""Frames that arrive in the same write as the upgrade request, at a real Node. RFC 6455
4.1 tells a client to wait for the 101 first, but a client that does not must not have its
requests dropped without a word: they are answered, or the connection fails with a code.
Found (pre-existing, a38c336 too): they were dropped, and a later request met
`hello_required`; now the 101 is followed by a Close 1002 that says why."""

from __future__ import annotations

import struct

import trio

from tests.maia.node._raw import client_frame, upgrade_request
from tests.maia.node.conftest import LiveNode
from tests.maia.node.test_control_amid_whole import _still_serving
from tests.maia.node.test_direct_frames import TEXT, _hello
from tests.maia.node.test_direct_order import _unknown

CLOSE = 0x8


async def test_requests_in_the_handshake_s_write_are_answered_or_failed(node: LiveNode) -> None:
    """Upgrade, hello, a request, a Close 1000 in one write: the Node answers (or fails
    the connection with a Close) within 10 s; it does not sit silent."""
    headers = {"Host": f"127.0.0.1:{node.port}", "Authorization": f"Bearer {node.token}"}
    frames = (
        client_frame(TEXT, _hello(1)) + client_frame(TEXT, _unknown(2))
        + client_frame(CLOSE, struct.pack("!H", 1000))
    )  # fmt: skip
    stream = await trio.open_tcp_stream("127.0.0.1", node.port)
    data = b""
    async with stream:
        await stream.send_all(upgrade_request(node.port, headers) + frames)
        with trio.move_on_after(10):
            while chunk := await stream.receive_some(65536):
                data += chunk
                assert len(data) < 1 << 20
    head, _, rest = data.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 101")
    assert rest, "the frames sent with the upgrade were neither answered nor failed"
    assert rest[0] & 0x0F == CLOSE
    (code,) = struct.unpack("!H", rest[2:4])
    assert code == 1002
    assert b"before the handshake" in rest
    await _still_serving(node)
