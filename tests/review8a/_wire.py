"""A blocking raw WebSocket client for the review tests: the upgrade, masked frames and
the Node's answers read frame by frame, on a loopback socket with a 10 s timeout."""

from __future__ import annotations

import base64
import json
import os
import socket
import struct
from typing import Any

from maia.protocol import PROTOCOL_VERSION, REGISTRY

TEXT, CLOSE = 0x1, 0x8


def frame(opcode: int, payload: bytes) -> bytes:
    """One masked, final client frame."""
    mask, size = os.urandom(4), len(payload)
    if size < 126:
        head = struct.pack("!BB", 0x80 | opcode, 0x80 | size)
    elif size < 65536:
        head = struct.pack("!BBH", 0x80 | opcode, 0xFE, size)
    else:
        head = struct.pack("!BBQ", 0x80 | opcode, 0xFF, size)
    return head + mask + bytes(byte ^ mask[index % 4] for index, byte in enumerate(payload))


class RawApi:
    """One upgraded `/api/v1` connection to the Node at `port` (or another `path`, with a
    proposed `subprotocol`)."""

    def __init__(
        self, port: int, token: str, path: str = "/api/v1", subprotocol: str | None = None
    ) -> None:
        self.socket = socket.create_connection(("127.0.0.1", port), timeout=10)
        key = base64.b64encode(os.urandom(16)).decode()
        offered = "" if subprotocol is None else f"Sec-WebSocket-Protocol: {subprotocol}\r\n"
        self.socket.sendall(
            (
                f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n"
                f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n{offered}"
                f"Sec-WebSocket-Version: 13\r\nAuthorization: Bearer {token}\r\n\r\n"
            ).encode()
        )
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.socket.recv(1)
            assert chunk, "the Node closed during the upgrade"
            head += chunk
        assert head.startswith(b"HTTP/1.1 101"), head[:80]

    def _exact(self, size: int) -> bytes:
        data = b""
        while len(data) < size:
            chunk = self.socket.recv(size - len(data))
            if not chunk:
                raise EOFError("the Node closed the connection")
            data += chunk
        return data

    def read_frame(self) -> tuple[int, bytes]:
        first, second = self._exact(2)
        size = second & 0x7F
        if size == 126:
            (size,) = struct.unpack("!H", self._exact(2))
        elif size == 127:
            (size,) = struct.unpack("!Q", self._exact(8))
        return first & 0x0F, self._exact(size)

    def ask(self, request: Any) -> dict[str, Any]:
        """Send `request` (JSON-encoded unless bytes) and read the next answer."""
        data = request if isinstance(request, bytes) else json.dumps(request).encode()
        self.socket.sendall(frame(TEXT, data))
        opcode, payload = self.read_frame()
        assert opcode == TEXT, (opcode, payload[:80])
        answer: dict[str, Any] = json.loads(payload)
        return answer

    def hello(self) -> dict[str, Any]:
        params = {"protocol": PROTOCOL_VERSION, "registryDigest": REGISTRY.digest}
        answer = self.ask({"id": 0, "method": "node.hello", "params": params})
        assert answer["ok"] is True, answer
        return answer

    def close(self) -> None:
        self.socket.close()

    def __enter__(self) -> RawApi:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
