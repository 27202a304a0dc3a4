"""Fixtures: real storage, a real hub, and the observation socket served by a real
trio-websocket server on 127.0.0.1 (the Node's upgrade gate is tested over a real Node)."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import attrs
import pytest
import trio
from trio_websocket import WebSocketRequest, WebSocketServer

from maia.client import Endpoint
from maia.core import SystemClock
from maia.observe import (
    ObservationHub,
    accept_observations,
    open_hub,
    serve_observation_connection,
)
from storage import EventRecord, Storage, append_event, open_storage
from tests.maia.node.conftest import node_process as node_process  # a real Node process


@attrs.define
class Served:
    store: Storage
    hub: ObservationHub
    port: int
    heartbeat_s: float

    @property
    def endpoint(self) -> Endpoint:
        return Endpoint(f"ws://127.0.0.1:{self.port}/api/v1", "unused")

    async def append(self, owner: str, count: int, **extra: Any) -> list[EventRecord]:
        """Append `count` events of `owner` in one transaction."""

        def write(conn: sqlite3.Connection) -> list[EventRecord]:
            return [
                append_event(
                    conn,
                    owner_id=owner,
                    event_type=extra.get("event_type", "x.tick"),
                    payload={"n": i, **extra.get("payload", {})},
                    now_ms=1,
                    project_id=extra.get("project_id"),
                    session_id=extra.get("session_id"),
                )
                for i in range(count)
            ]

        return await self.store.write(write)


async def serve_socket(
    hub: ObservationHub, heartbeat_s: float, *, task_status: Any = trio.TASK_STATUS_IGNORED
) -> None:
    async def handle(request: WebSocketRequest) -> None:
        socket = await accept_observations(request)
        if socket is not None:
            await serve_observation_connection(socket, hub, heartbeat_s=heartbeat_s)

    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    server = WebSocketServer(handle, listeners, max_message_size=1 << 20, disconnect_timeout=2)
    async with trio.open_nursery() as nursery:
        await nursery.start(server.run)
        task_status.started(server.port)


@pytest.fixture
async def served(nursery: trio.Nursery, tmp_path: Path) -> AsyncIterator[Served]:
    """Real storage, a hub on it, the socket on a loopback port; heartbeats every 0.2 s."""
    async with (
        open_storage(tmp_path / "db.sqlite", clock=SystemClock(), synchronous="OFF") as store,
        open_hub(store, SystemClock(), buffer_capacity=256) as hub,
    ):
        port = await nursery.start(serve_socket, hub, 0.2)
        yield Served(store, hub, port, 0.2)
        nursery.cancel_scope.cancel()
