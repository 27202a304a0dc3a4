"""Counting what the SDK puts on the wire, for tests that pin round trips: every TCP
connection it opens (API and observation sockets alike) and every request frame's method."""

from __future__ import annotations

from typing import Any

import anyio
import orjson
import pytest

from maia.client._transport import WebSocket


class Wire:
    """TCP connections opened and requests sent, by method, since the last reset."""

    def __init__(self) -> None:
        self.connections = 0
        self.methods: list[str] = []


def count_wire(monkeypatch: pytest.MonkeyPatch) -> Wire:
    """Patch the SDK's transport (undone with the monkeypatch) to count into a new `Wire`."""
    seen = Wire()
    connect, send = anyio.connect_tcp, WebSocket.send

    async def counted_connect(*args: Any, **kwargs: Any) -> Any:
        seen.connections += 1
        return await connect(*args, **kwargs)

    async def counted_send(self: WebSocket, text: str) -> None:
        seen.methods.append(orjson.loads(text)["method"])
        await send(self, text)

    monkeypatch.setattr(anyio, "connect_tcp", counted_connect)
    monkeypatch.setattr(WebSocket, "send", counted_send)
    return seen
