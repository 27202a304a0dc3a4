"""Replayable writes: no savepoint each, yet a failing one is rolled back alone."""

from __future__ import annotations

import sqlite3
import threading
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import trio
import trio.testing

import storage
from maia.core import FakeClock
from storage._writer import Outside

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


def _event(name: str, runs: _Runs, *, fail: bool = False) -> storage.WriteFn[int]:
    """`_owned` with `name` as its own owner."""
    return _owned(name, name, runs, fail=fail)


Request = tuple[str, storage.WriteFn[object], bool]  # a name, its body, replayable or not


async def _one_batch(
    store: storage.Storage, requests: Sequence[Request], *, in_order: bool = False
) -> dict[str, object]:
    """`requests` queued behind a gate that holds the writer, then let through together, so
    they run as one batch (queued in their order with `in_order`, else as trio starts
    them): each one's answer, or the ValueError it raised, by name."""
    gate = Gate()
    results: dict[str, object] = {}

    async def call(name: str, fn: storage.WriteFn[object], replayable: bool) -> None:
        try:
            results[name] = await store.write(fn, replayable=replayable)
        except ValueError as error:
            results[name] = error

    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(store.write, Outside(gate))
            await gate.wait_entered()
            for name, fn, replayable in requests:
                nursery.start_soon(call, name, fn, replayable)
                if in_order:
                    await trio.testing.wait_all_tasks_blocked()  # queued in this order
            await trio.testing.wait_all_tasks_blocked()
            gate.set()
    return results


async def test_failing_replayable_request_is_rolled_back_alone(tmp_path: Path) -> None:
    """In a batch of guarded and replayable requests, a failing replayable one leaves nothing,
    the others commit with their answers, each body runs at most twice, listeners see each
    committed event once."""
    runs = _Runs()
    seen: list[str] = []
    async with storage.open_storage(tmp_path / "r.db", clock=FakeClock()) as store:
        store.add_commit_listener(lambda events: seen.extend(e.owner_id for e in events))
        results = await _one_batch(store, [
            ("guarded", _event("guarded", runs), False),
            ("r1", _event("r1", runs), True),
            ("bad", _event("bad", runs, fail=True), True),
            ("r2", _event("r2", runs), True),
        ])  # fmt: skip
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
    row = session_row()
    key = storage.MutationKey("actor_a", "session.create", "cmd-1")

    def mutation(conn: sqlite3.Connection) -> storage.MutationResult:
        return storage.run_mutation(
            conn, key=key, input_digest="sha256:" + "0" * 64, now_ms=1,
            apply=create_session_apply(row, 1),
        )  # fmt: skip

    def failing(conn: sqlite3.Connection) -> None:
        raise ValueError("fails")

    async with storage.open_storage(tmp_path / "i.db", clock=FakeClock()) as store:
        await store.write(seed_project)
        duplicates: list[Request] = [(f"mutation{n}", mutation, True) for n in range(3)]
        results = await _one_batch(store, [*duplicates, ("failing", failing, True)])
    assert isinstance(results["failing"], ValueError)
    answers = [r for r in results.values() if isinstance(r, storage.MutationResult)]
    assert len(answers) == 3
    assert sorted(a.delivery for a in answers) == ["duplicate", "duplicate", "new"]
    assert len({a.receipt.receipt_id for a in answers}) == 1
    with sqlite3.connect(tmp_path / "i.db") as conn:
        assert conn.execute("SELECT count(*) FROM receipts").fetchone()[0] == 1
        assert conn.execute("SELECT count(*) FROM sessions").fetchone()[0] == 1


async def test_replayable_requests_first_in_a_transaction_need_no_savepoint(
    tmp_path: Path,
) -> None:
    """A batch of replayable requests only runs them under no savepoint; when one of them
    raises, the whole transaction's rollback undoes it alone: the others commit with
    gap-free owner sequences, each body runs at most twice, listeners see each event once."""
    runs = _Runs()
    seen: list[str] = []
    statements: list[str] = []
    async with storage.open_storage(tmp_path / "r.db", clock=FakeClock()) as store:
        store.add_commit_listener(lambda events: seen.extend(e.event_type for e in events))
        await store.write(lambda conn: conn.set_trace_callback(statements.append))
        # A batch of two that commits: no savepoint statement at all.
        results = await _one_batch(store, [
            ("a", _owned("session_o", "a", runs), True),
            ("b", _owned("session_o", "b", runs), True),
        ], in_order=True)  # fmt: skip
        assert not [s for s in statements if "SAVEPOINT" in s or "RELEASE" in s]
        # A batch of three whose middle request raises.
        results |= await _one_batch(store, [
            ("c", _owned("session_o", "c", runs), True),
            ("bad", _owned("session_o", "bad", runs, fail=True), True),
            ("d", _owned("session_o", "d", runs), True),
        ], in_order=True)  # fmt: skip
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
