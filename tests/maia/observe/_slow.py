"""A client that stops reading: a small receive buffer, a one-message queue, no reads."""

from __future__ import annotations

import socket as stdlib_socket
from typing import Any

import attrs
import orjson
import trio
from trio_websocket import ConnectionClosed, WebSocketConnection, wrap_client_stream

from maia.protocol import PROTOCOL_VERSION

SUBPROTOCOL = "maia.node.observations.v1"


@attrs.frozen
class Stalled:
    ws: WebSocketConnection
    stream: trio.SocketStream

    @property
    def peer(self) -> str:
        """This client as the Node sees it (`host:port`): the hub's `overflowing_peers`
        names it once its own subscriber overflowed, whoever else did."""
        host, port = self.stream.socket.getsockname()[:2]
        return f"{host}:{port}"

    def overflowed(self, hub: Any) -> bool:
        """Whether the hub holds this client's subscriber overflowed (it stays so until the
        client reads again: its gap or resync cannot be sent before)."""
        return self.peer in hub.statistics().overflowing_peers


async def open_stalled(
    nursery: trio.Nursery, port: int, request: dict[str, Any], token: str = "unused"
) -> Stalled:
    """Connect with a 4 KiB receive buffer, say node.hello (its answer is read), and send
    `request`; nothing more is read until `drain` (trio-websocket's reader stops once its
    one-message queue is full)."""
    raw = stdlib_socket.socket(stdlib_socket.AF_INET, stdlib_socket.SOCK_STREAM)
    raw.setsockopt(stdlib_socket.SOL_SOCKET, stdlib_socket.SO_RCVBUF, 4096)
    sock = trio.socket.from_stdlib_socket(raw)
    await sock.connect(("127.0.0.1", port))
    stream = trio.SocketStream(sock)
    ws = await wrap_client_stream(
        nursery, stream, f"127.0.0.1:{port}", "/api/v1/observations",
        subprotocols=[SUBPROTOCOL],
        extra_headers=[(b"Authorization", f"Bearer {token}".encode())],
        message_queue_size=1,
    )  # fmt: skip
    hello = {"id": "hello", "method": "node.hello", "params": {"protocol": PROTOCOL_VERSION}}
    await ws.send_message(orjson.dumps(hello).decode())
    answer = orjson.loads(await ws.get_message())
    assert answer["ok"] is True, answer
    await ws.send_message(orjson.dumps(request).decode())
    return Stalled(ws, stream)


async def drain(stalled: Stalled) -> list[dict[str, Any]]:
    """Read every message until the Node closes the connection."""
    ws = stalled.ws
    frames: list[dict[str, Any]] = []
    try:
        while True:
            frames.append(orjson.loads(await ws.get_message()))
    except ConnectionClosed:
        return frames
    finally:
        await ws.aclose()
        await stalled.stream.aclose()
