"""node.status's shared counts read, its answer while storage is not open, and its answer
kept in wire form (rebuilt when an input changes, byte for byte a fresh build's)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
import trio

from maia.core import FakeClock, SystemClock
from maia.node import Call, NodeConfig, NodeHome, NodeRunning, NodeServices, serve_node
from maia.node._dispatch import Encoded
from maia.node._handlers_node import node_status
from maia.node._ops import Empty
from maia.node._services import Mailbox
from maia.node._status_counts import STATUS_TTL_MS, CountsCache
from maia.node._status_wire import StatusWire
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
    assert isinstance(status, Encoded)
    assert status.value["storage"]["integrity"] == "unavailable"
    assert status.value["nodeId"] == "node_x"
    assert status.value["epoch"] == 3
    assert status.value["mailboxes"] == []


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
    assert not isinstance(first, Encoded)
    waited = (await first).value
    again = node_status(call, Empty())
    assert isinstance(again, Encoded)
    fields = ("storage", "sessionsByState", "configFiles")
    assert [again.value[f] for f in fields] == [waited[f] for f in fields]
    assert again.value["storage"]["integrity"] == "ok"
    clock.advance(max(STATUS_TTL_MS, FILES_FRESH_MS))
    later = node_status(call, Empty())
    assert not isinstance(later, Encoded)
    assert (await later).value["storage"]["integrity"] == "ok"


def _answer(services: NodeServices) -> dict[str, Any]:
    call = Call(role="local-user", method="node.status", connection_id=1, services=services)
    status = node_status(call, Empty())
    assert isinstance(status, Encoded)
    return status.value


async def test_a_kept_answer_is_a_fresh_build_but_the_uptime(tmp_path: Path) -> None:
    """Asked again with nothing changed, the answer differs in uptimeMs alone, and its bytes
    (key order included) are those of an answer built afresh at the same moment."""
    clock = FakeClock()
    services = NodeServices(NodeConfig(NodeHome(tmp_path), clock=clock), 0,
                            clock.monotonic_ms(), node_id="node_x", epoch=1)  # fmt: skip
    first = _answer(services)
    clock.advance(7)
    kept = _answer(services)
    assert kept["uptimeMs"] == first["uptimeMs"] + 7
    assert {**kept, "uptimeMs": first["uptimeMs"]} == first
    services.status_wire = StatusWire()  # nothing kept: built and encoded again
    assert orjson.dumps(_answer(services)) == orjson.dumps(kept)


async def test_a_changed_input_rebuilds_the_answer(tmp_path: Path) -> None:
    """A mailbox's depth, a new mailbox and the live workers show at the next answer, the
    deepest mailbox first."""
    boxes = [Mailbox("alpha", 0, 8)]
    workers = [0]
    services = NodeServices(NodeConfig(NodeHome(tmp_path), clock=FakeClock()), 0, 0,
                            mailbox_sources=[lambda: boxes],
                            worker_count=lambda: workers[0])  # fmt: skip
    assert _answer(services)["mailboxes"] == [{"name": "alpha", "depth": 0, "capacity": 8}]
    boxes[0] = Mailbox("alpha", 3, 8)
    boxes.append(Mailbox("beta", 5, 16))
    workers[0] = 2
    answer = _answer(services)
    assert answer["mailboxes"] == [
        {"name": "beta", "depth": 5, "capacity": 16},
        {"name": "alpha", "depth": 3, "capacity": 8},
    ]
    assert answer["liveWorkers"] == 2
    assert _answer(services) == answer
