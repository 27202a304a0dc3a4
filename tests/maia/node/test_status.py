"""node.status's shared counts read and its answer while storage is not open."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import trio

from maia.core import FakeClock, SystemClock
from maia.node import Call, NodeConfig, NodeHome, NodeRunning, NodeServices, serve_node
from maia.node._handlers_node import node_status
from maia.node._ops import Empty, NodeStatusOutput
from maia.node._status_counts import STATUS_TTL_MS, CountsCache
from maia.service._admitted import FILES_FRESH_MS
from storage import Storage, open_storage


def _counting(store: Storage, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    reads: list[int] = []
    original = store.read

    async def read(fn: Any) -> Any:
        reads.append(1)
        await trio.sleep(0.01)  # keep the read in flight while others arrive
        return await original(fn)

    monkeypatch.setattr(store, "read", read)
    return reads


async def test_counts_are_read_once_per_ttl_and_shared(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Concurrent callers share one read; within the TTL no new read; after it, one more."""
    async with open_storage(tmp_path / "maia.db", clock=SystemClock()) as store:
        reads = _counting(store, monkeypatch)
        cache = CountsCache(ttl_ms=250)
        answers: list[Any] = []

        async def ask(now_ms: int) -> None:
            answers.append(await cache.read(store, now_ms))

        async with trio.open_nursery() as nursery:
            for _ in range(10):
                nursery.start_soon(ask, 1000)
        assert len(reads) == 1
        await ask(1249)
        assert len(reads) == 1
        await ask(1250)
        assert len(reads) == 2
        assert len(answers) == 12
        assert all(answer == answers[0] for answer in answers)
        assert answers[0][1:] == ({}, 0)  # no Sessions, no queued turns


async def test_status_without_storage_reports_unavailable(tmp_path: Path) -> None:
    """While storage is not open, node.status answers integrity: unavailable, not an error."""
    services = NodeServices(NodeConfig(NodeHome(tmp_path)), 0, 0, node_id="node_x", epoch=3)
    call = Call(role="local-user", method="node.status", connection_id=1, services=services)
    status = node_status(call, Empty())  # no storage, no Session services: at once
    assert isinstance(status, NodeStatusOutput)
    assert status.storage.integrity == "unavailable"
    assert status.node_id == "node_x"
    assert status.epoch == 3
    assert status.mailboxes == ()


async def test_status_answers_at_once_while_its_reads_are_fresh(
    nursery: trio.Nursery, tmp_path: Path
) -> None:
    """A Node's first node.status waits for its reads; the next, within their bounds, is
    answered at once with what they read; past the bounds it waits again."""
    clock = FakeClock()
    home = NodeHome(tmp_path / "home")
    running: NodeRunning = await nursery.start(serve_node, NodeConfig(home, clock=clock))
    call = Call(role="local-user", method="node.status", connection_id=1, services=running.services)
    first = node_status(call, Empty())
    assert not isinstance(first, NodeStatusOutput)
    waited = await first
    again = node_status(call, Empty())
    assert isinstance(again, NodeStatusOutput)
    assert (again.storage, again.sessions_by_state, again.config_files) == (
        waited.storage,
        waited.sessions_by_state,
        waited.config_files,
    )
    assert again.storage.integrity == "ok"
    clock.advance(max(STATUS_TTL_MS, FILES_FRESH_MS))
    later = node_status(call, Empty())
    assert not isinstance(later, NodeStatusOutput)
    assert (await later).storage.integrity == "ok"
