"""Test helpers that speak to the Node below the SDK: raw HTTP upgrades and raw frames."""

from __future__ import annotations

import base64
import os
import struct
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import urlsplit

import orjson
import trio
from trio_websocket import WebSocketConnection, open_websocket_url, wrap_client_stream

from maia.observe import SUBPROTOCOL


def port_of(url: str) -> int:
    port = urlsplit(url).port
    assert port is not None
    return port


def upgrade_request(
    port: int, headers: dict[str, str], path: str = "/api/v1", *, version: str = "HTTP/1.1"
) -> bytes:
    """A hand-written upgrade request (`headers` may override the key, or drop it as None)."""
    fields: dict[str, str | None] = {
        "Upgrade": "websocket",
        "Connection": "Upgrade",
        "Sec-WebSocket-Key": base64.b64encode(os.urandom(16)).decode(),
        "Sec-WebSocket-Version": "13",
        **headers,
    }
    lines = [f"GET {path} {version}"]
    lines += [f"{name}: {value}" for name, value in fields.items() if value is not None]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


async def read_response(stream: trio.SocketStream) -> bytes:
    """An HTTP response head (and its JSON body, if any) from `stream`."""
    response = b""
    with trio.fail_after(10):
        while b"\r\n\r\n" not in response or (
            b"content-length" in response.lower() and not response.endswith(b"}")
        ):
            chunk = await stream.receive_some(65536)
            if not chunk:
                break
            response += chunk
    return response


async def raw_upgrade(
    port: int, headers: dict[str, str], path: str = "/api/v1", *, version: str = "HTTP/1.1"
) -> tuple[int, bytes]:
    """Send a hand-written upgrade request; return (HTTP status, whole response)."""
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    async with stream:
        await stream.send_all(upgrade_request(port, headers, path, version=version))
        response = await read_response(stream)
    status = int(response.split(b" ", 2)[1])
    return status, response


def client_frame(opcode: int, payload: bytes, *, announce: int | None = None) -> bytes:
    """One masked client frame; `announce` puts another length in its header."""
    mask = os.urandom(4)
    length = len(payload) if announce is None else announce
    if length < 126:
        head = struct.pack("!BB", 0x80 | opcode, 0x80 | length)
    elif length < 65536:
        head = struct.pack("!BBH", 0x80 | opcode, 0x80 | 126, length)
    else:
        head = struct.pack("!BBQ", 0x80 | opcode, 0x80 | 127, length)
    return head + mask + bytes(byte ^ mask[index % 4] for index, byte in enumerate(payload))


def whole_server_frames(data: bytes) -> tuple[list[tuple[int, bytes]], bytes]:
    """The whole server (unmasked) frames at the start of `data`, each as (opcode, payload),
    and the bytes after them (part of a frame, or none)."""
    frames = []
    while len(data) >= 2:
        opcode, length, start = data[0] & 0x0F, data[1] & 0x7F, 2
        if length == 126:
            length, start = int.from_bytes(data[2:4]), 4
        elif length == 127:
            length, start = int.from_bytes(data[2:10]), 10
        if len(data) < start + length:
            break
        frames.append((opcode, data[start : start + length]))
        data = data[start + length :]
    return frames, data


async def read_close_code(stream: trio.SocketStream) -> int | None:
    """The code of the Close frame the server sends next (None: TCP closed without one)."""
    data = b""
    with trio.fail_after(10):
        while True:
            frames, data = whole_server_frames(data)
            for opcode, payload in frames:
                if opcode == 0x8:
                    return int.from_bytes(payload[:2])
            chunk = await stream.receive_some(65536)
            if not chunk:
                return None
            data += chunk


async def upgrade_to_api(stream: trio.SocketStream, port: int, token: str) -> None:
    """Upgrade `stream` (connected to the Node at `port`) to the API socket with `token`;
    the Node must answer 101."""
    headers = {"Host": f"127.0.0.1:{port}", "Authorization": f"Bearer {token}"}
    await stream.send_all(upgrade_request(port, headers))
    head = await read_response(stream)
    assert head.startswith(b"HTTP/1.1 101"), head[:80]


@asynccontextmanager
async def open_observation_socket(
    port: int, auth: list[tuple[bytes, bytes]]
) -> AsyncIterator[WebSocketConnection]:
    """The observation socket (/api/v1/observations) of the Node at `port`, on a TCP stream
    of our own: trio-websocket's client never closes a socket the server closed first,
    which this socket does after an error. Closed (a Close handshake) when the body ends;
    a body that raises leaves it to the nursery's cancellation."""
    async with (
        trio.open_nursery() as nursery,
        await trio.open_tcp_stream("127.0.0.1", port) as tcp,
    ):
        ws = await wrap_client_stream(
            nursery, tcp, f"127.0.0.1:{port}", "/api/v1/observations",
            subprotocols=[SUBPROTOCOL], extra_headers=auth,
        )  # fmt: skip
        yield ws
        await ws.aclose()


async def request(ws: WebSocketConnection, frame: str | bytes) -> dict[str, Any]:
    await ws.send_message(frame)
    with trio.fail_after(10):
        answer: dict[str, Any] = orjson.loads(await ws.get_message())
    return answer


async def hello(ws: WebSocketConnection) -> dict[str, Any]:
    from maia.protocol import PROTOCOL_VERSION, REGISTRY

    params = {"protocol": PROTOCOL_VERSION, "registryDigest": REGISTRY.digest}
    return await request(
        ws, orjson.dumps({"id": 0, "method": "node.hello", "params": params}).decode()
    )


__all__ = [
    "client_frame",
    "hello",
    "open_observation_socket",
    "open_websocket_url",
    "port_of",
    "raw_upgrade",
    "read_close_code",
    "read_response",
    "request",
    "upgrade_request",
    "upgrade_to_api",
    "whole_server_frames",
]
