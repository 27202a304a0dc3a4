"""RFC 6455 at the Node's door, over raw loopback sockets: the request line, the key, the
close codes of a broken frame, and the connection cap counted from TCP accept."""

from __future__ import annotations

import base64

import orjson
import pytest
import trio

from maia.node import ApiServer, Dispatcher, HandlerTable

from ._raw import client_frame, raw_upgrade, read_close_code, read_response, upgrade_request
from .conftest import LiveNode


def _headers(node: LiveNode, **extra: str | None) -> dict[str, str | None]:
    return {"Host": f"127.0.0.1:{node.port}", "Authorization": f"Bearer {node.token}", **extra}


@pytest.mark.parametrize("version", ["HTTP/1.0", "HTTP/2.0"])
async def test_only_http_1_1_may_upgrade(node: LiveNode, version: str) -> None:
    """An HTTP/1.0 or HTTP/2.0 request line gets 505 with a typed body, never a 101."""
    status, response = await raw_upgrade(node.port, _headers(node), version=version)  # type: ignore[arg-type]
    assert status == 505
    body = orjson.loads(response.split(b"\r\n\r\n", 1)[1])
    assert body["error"]["code"] == "invalid_request"
    assert version.removeprefix("HTTP/") in body["error"]["message"]


@pytest.mark.parametrize(
    "key",
    [
        "abc",
        base64.b64encode(b"x" * 15).decode(),  # 15 bytes
        base64.b64encode(b"x" * 17).decode(),  # 17 bytes
        "!" * 22 + "==",  # 24 characters, not base64
    ],
)
async def test_an_invalid_websocket_key_is_refused(node: LiveNode, key: str) -> None:
    """A Sec-WebSocket-Key that is not 16 bytes in base64 gets 400 invalid_request."""
    status, response = await raw_upgrade(node.port, _headers(node, **{"Sec-WebSocket-Key": key}))  # type: ignore[arg-type]
    assert status == 400
    body = orjson.loads(response.split(b"\r\n\r\n", 1)[1])
    assert body["error"]["details"] == {"header": "Sec-WebSocket-Key"}


async def _upgraded(node: LiveNode) -> trio.SocketStream:
    stream = await trio.open_tcp_stream("127.0.0.1", node.port)
    await stream.send_all(upgrade_request(node.port, _headers(node)))  # type: ignore[arg-type]
    assert b" 101 " in (await read_response(stream)).split(b"\r\n", 1)[0]
    return stream


async def test_invalid_utf8_in_a_text_frame_closes_with_1007(node: LiveNode) -> None:
    """A text frame that is not UTF-8 is answered with a Close frame, code 1007."""
    async with await _upgraded(node) as stream:
        await stream.send_all(client_frame(0x1, b'{"id": 1, "method": "\xff\xfe"}'))
        assert await read_close_code(stream) == 1007


async def test_a_header_announcing_64_mib_closes_with_1009_at_once(node: LiveNode) -> None:
    """A frame header announcing 64 MiB gets Close 1009 before any of its payload is sent."""
    async with await _upgraded(node) as stream:
        await stream.send_all(client_frame(0x1, b"{", announce=64 * 1024 * 1024))
        assert await read_close_code(stream) == 1009


async def test_simultaneous_upgrades_cannot_pass_the_cap(nursery: trio.Nursery) -> None:
    """Twelve upgrades sent at once to a server capped at 8: at most 8 get 101."""
    server = ApiServer(Dispatcher(HandlerTable()), None, token="t" * 64, max_connections=8)
    port = await nursery.start(server.serve, 0)
    headers = {"Host": f"127.0.0.1:{port}", "Authorization": "Bearer " + "t" * 64}
    streams = [await trio.open_tcp_stream("127.0.0.1", port) for _ in range(12)]
    try:
        for stream in streams:  # every TCP connection is open before any handshake is sent
            await stream.send_all(upgrade_request(port, headers))
        statuses = [int((await read_response(s)).split(b" ", 2)[1]) for s in streams]
    finally:
        for stream in streams:
            await stream.aclose()
    assert statuses.count(101) <= 8
    assert set(statuses) <= {101, 503}
