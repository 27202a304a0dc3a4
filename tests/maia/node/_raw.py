"""Test helpers that speak to the Node below the SDK: raw HTTP upgrades and raw frames."""

from __future__ import annotations

import base64
import os
from typing import Any
from urllib.parse import urlsplit

import orjson
import trio
from trio_websocket import WebSocketConnection, open_websocket_url


def port_of(url: str) -> int:
    port = urlsplit(url).port
    assert port is not None
    return port


async def raw_upgrade(
    port: int, headers: dict[str, str], path: str = "/api/v1"
) -> tuple[int, bytes]:
    """Send a hand-written upgrade request; return (HTTP status, whole response)."""
    key = base64.b64encode(os.urandom(16)).decode()
    lines = [
        f"GET {path} HTTP/1.1",
        "Upgrade: websocket",
        "Connection: Upgrade",
        f"Sec-WebSocket-Key: {key}",
        "Sec-WebSocket-Version: 13",
        *(f"{name}: {value}" for name, value in headers.items()),
    ]
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    async with stream:
        await stream.send_all(("\r\n".join(lines) + "\r\n\r\n").encode())
        response = b""
        with trio.fail_after(10):
            while b"\r\n\r\n" not in response or (
                b"content-length" in response.lower() and not response.endswith(b"}")
            ):
                chunk = await stream.receive_some(65536)
                if not chunk:
                    break
                response += chunk
    status = int(response.split(b" ", 2)[1])
    return status, response


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


__all__ = ["hello", "open_websocket_url", "port_of", "raw_upgrade", "request"]
