"""Replayable writes: no savepoint each, yet a failing one is rolled back alone."""

from __future__ import annotations

import sqlite3
import threading
from collections import Counter
from pathlib import Path

import trio
import trio.testing

import storage
from maia.core import FakeClock

from ._fixtures import create_session_apply, seed_project, session_row
from .test_actor import Gate


class _Runs:
    """Counts how often each request body ran (in the writer thread)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.counts: Counter[str] = Counter()

    def seen(self, name: str) -> None:
        with self._lock:
            self.counts[name] += 1


def _event(name: str, runs: _Runs, *, fail: bool = False) -> storage.WriteFn[int]:
    """Insert a counter row and append one event for owner `name`; optionally then raise."""

    def fn(conn: sqlite3.Connection) -> int:
        runs.seen(name)
        conn.execute("INSERT INTO counters (name, value) VALUES (?, 1)", (name,))
        event = storage.append_event(conn, owner_id=name, event_type="t", payload={}, now_ms=1)
        if fail:
            raise ValueError(f"{name} fails")
        return event.owner_sequence

    return fn


async def test_failing_replayable_request_is_rolled_back_alone(tmp_path: Path) -> None:
    """In a batch of guarded and replayable requests, a failing replayable one leaves nothing,
    the others commit with their answers, each body runs at most twice, listeners see each
    committed event once."""
    gate = Gate()
    runs = _Runs()
    seen: list[str] = []
    results: dict[str, object] = {}
    async with storage.open_storage(tmp_path / "r.db", clock=FakeClock()) as store:
        store.add_commit_listener(lambda events: seen.extend(e.owner_id for e in events))

        async def call(name: str, fn: storage.WriteFn[object], replayable: bool) -> None:
            try:
                results[name] = await store.write(fn, replayable=replayable)
            except ValueError as error:
                results[name] = error

        with trio.fail_after(10):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(call, "gate", gate, False)
                await gate.wait_entered()
                nursery.start_soon(call, "guarded", _event("guarded", runs), False)
                nursery.start_soon(call, "r1", _event("r1", runs), True)
                nursery.start_soon(call, "bad", _event("bad", runs, fail=True), True)
                nursery.start_soon(call, "r2", _event("r2", runs), True)
                await trio.testing.wait_all_tasks_blocked()
                gate.set()
        stats = store.statistics()
    assert stats.max_batch_size == 4
    assert stats.failed_requests == 1
    assert results["guarded"] == results["r1"] == results["r2"] == 1
    assert isinstance(results["bad"], ValueError)
    assert sorted(seen) == ["guarded", "r1", "r2"]
    assert runs.counts["guarded"] == 1
    assert runs.counts["bad"] == 1
    assert all(runs.counts[name] <= 2 for name in ("r1", "r2"))
    with sqlite3.connect(tmp_path / "r.db") as conn:
        names = {row[0] for row in conn.execute("SELECT name FROM counters")}
        owners = [row[0] for row in conn.execute("SELECT owner_id FROM events")]
    assert {"guarded", "r1", "r2"} <= names
    assert "bad" not in names
    assert sorted(owners) == ["guarded", "r1", "r2"]


async def test_replayable_mutations_keep_idempotency(tmp_path: Path) -> None:
    """Concurrent replayable duplicates of one key, beside a failing one, run the mutation
    once: one receipt, the same result for every caller."""
    gate = Gate()
    row = session_row()
    key = storage.MutationKey("actor_a", "session.create", "cmd-1")

    def mutation(conn: sqlite3.Connection) -> storage.MutationResult:
        return storage.run_mutation(
            conn, key=key, input_digest="sha256:" + "0" * 64, now_ms=1,
            apply=create_session_apply(row, 1),
        )  # fmt: skip

    def failing(conn: sqlite3.Connection) -> None:
        raise ValueError("fails")

    results: list[object] = []
    async with storage.open_storage(tmp_path / "i.db", clock=FakeClock()) as store:
        await store.write(seed_project)

        async def call(fn: storage.WriteFn[object]) -> None:
            try:
                results.append(await store.write(fn, replayable=True))
            except ValueError as error:
                results.append(error)

        with trio.fail_after(10):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(store.write, gate)
                await gate.wait_entered()
                for _ in range(3):
                    nursery.start_soon(call, mutation)
                nursery.start_soon(call, failing)
                await trio.testing.wait_all_tasks_blocked()
                gate.set()
    answers = [r for r in results if isinstance(r, storage.MutationResult)]
    assert len(answers) == 3
    assert sorted(a.delivery for a in answers) == ["duplicate", "duplicate", "new"]
    assert len({a.receipt.receipt_id for a in answers}) == 1
    with sqlite3.connect(tmp_path / "i.db") as conn:
        assert conn.execute("SELECT count(*) FROM receipts").fetchone()[0] == 1
        assert conn.execute("SELECT count(*) FROM sessions").fetchone()[0] == 1


def _owned(owner: str, name: str, runs: _Runs, *, fail: bool = False) -> storage.WriteFn[int]:
    """Insert counter row `name` and append one event for `owner`; optionally then raise."""

    def fn(conn: sqlite3.Connection) -> int:
        runs.seen(name)
        conn.execute("INSERT INTO counters (name, value) VALUES (?, 1)", (name,))
        event = storage.append_event(conn, owner_id=owner, event_type=name, payload={}, now_ms=1)
        if fail:
            raise ValueError(f"{name} fails")
        return event.owner_sequence

    return fn


async def test_replayable_requests_first_in_a_transaction_need_no_savepoint(
    tmp_path: Path,
) -> None:
    """A batch of replayable requests only runs them under no savepoint; when one of them
    raises, the whole transaction's rollback undoes it alone: the others commit with
    gap-free owner sequences, each body runs at most twice, listeners see each event once."""
    gate = Gate()
    runs = _Runs()
    seen: list[str] = []
    statements: list[str] = []
    results: dict[str, object] = {}
    async with storage.open_storage(tmp_path / "r.db", clock=FakeClock()) as store:
        store.add_commit_listener(lambda events: seen.extend(e.event_type for e in events))
        await store.write(lambda conn: conn.set_trace_callback(statements.append))

        async def call(name: str, fn: storage.WriteFn[object]) -> None:
            try:
                results[name] = await store.write(fn, replayable=True)
            except ValueError as error:
                results[name] = error

        # A batch of two that commits: no savepoint statement at all.
        with trio.fail_after(10):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(store.write, gate)
                await gate.wait_entered()
                nursery.start_soon(call, "a", _owned("session_o", "a", runs))
                await trio.testing.wait_all_tasks_blocked()  # queued in this order
                nursery.start_soon(call, "b", _owned("session_o", "b", runs))
                await trio.testing.wait_all_tasks_blocked()
                gate.set()
        assert not [s for s in statements if "SAVEPOINT" in s or "RELEASE" in s]
        # A batch of three whose middle request raises.
        gate = Gate()
        with trio.fail_after(10):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(store.write, gate)
                await gate.wait_entered()
                nursery.start_soon(call, "c", _owned("session_o", "c", runs))
                await trio.testing.wait_all_tasks_blocked()  # queued in this order
                nursery.start_soon(call, "bad", _owned("session_o", "bad", runs, fail=True))
                await trio.testing.wait_all_tasks_blocked()  # queued in this order
                nursery.start_soon(call, "d", _owned("session_o", "d", runs))
                await trio.testing.wait_all_tasks_blocked()
                gate.set()
        await store.write(lambda conn: conn.set_trace_callback(None))
        stats = store.statistics()
        events = await store.read(lambda c: storage.read_owner_events(c, "session_o"))
    assert stats.max_batch_size == 3
    assert stats.failed_requests == 1
    assert (results["a"], results["b"], results["c"], results["d"]) == (1, 2, 3, 4)
    assert isinstance(results["bad"], ValueError)
    assert [(e.event_type, e.owner_sequence) for e in events] == [
        ("a", 1), ("b", 2), ("c", 3), ("d", 4)
    ]  # fmt: skip
    assert seen == ["a", "b", "c", "d"]
    assert runs.counts["bad"] == 1
    assert all(runs.counts[name] <= 2 for name in "abcd")
    with sqlite3.connect(tmp_path / "r.db") as conn:
        names = {row[0] for row in conn.execute("SELECT name FROM counters")}
    assert names - {"worker_epoch"} == {"a", "b", "c", "d"}
