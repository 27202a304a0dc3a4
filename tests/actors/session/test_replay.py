"""The Session's replayable writes replay exactly: when a sibling request of the same storage
batch fails, storage runs the Session's transaction body again (its first run rolled back),
and the rows and the actor's memory are those of a run without the failure.

The replay is storage's own (`storage/_batch.py`): `SiblingFails` holds the writer thread
with a gate request, queues the Session's replayable request, then a replayable request that
raises, and opens the gate, so both share one savepoint and the Session's runs twice."""

from __future__ import annotations

import sqlite3
import threading
from collections import Counter
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any, cast

import pytest
import trio
import trio.testing

from actors.session import turn_view
from maia.config import UserConfig
from storage import Storage, open_storage
from storage._writer import Outside

from .._virtual_time import driven_clock
from ._fake_workers import FakeWorkers
from ._harness import CLOCK, Harness
from ._open import open_session_runtime

TEXTS = ("hello replay", "x" * 5000, "/fail now")  # one item, many deltas, a failure item


class _Gate:
    """Holds the writer thread inside one request until opened."""

    def __init__(self) -> None:
        self.entered, self.opened = threading.Event(), threading.Event()

    def __call__(self, conn: sqlite3.Connection) -> None:
        self.entered.set()
        self.opened.wait(10)


class SiblingFails:
    """The real storage, but each replayable write shares its batch with a failing sibling
    queued after it (so storage replays it); everything else is the storage's own."""

    def __init__(self, store: Storage) -> None:
        self._store = store
        self.runs: Counter[int] = Counter()  # how often each replayable body ran
        self._lock = threading.Lock()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    async def write(self, fn: Callable[[sqlite3.Connection], Any], *,
                    replayable: bool = False) -> Any:  # fmt: skip
        if not replayable:
            return await self._store.write(fn)
        key = len(self.runs)
        self.runs[key] = 0

        def counted(conn: sqlite3.Connection) -> Any:
            with self._lock:
                self.runs[key] += 1
            return fn(conn)

        def failing(conn: sqlite3.Connection) -> None:
            conn.execute("UPDATE sessions SET title = 'never' WHERE 0")
            raise ValueError("the sibling fails")

        gate, box = _Gate(), {}

        async def mine() -> None:
            box["value"] = await self._store.write(counted, replayable=True)

        async def sibling() -> None:
            try:
                await self._store.write(failing, replayable=True)
            except ValueError:
                box["failed"] = True

        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._store.write, Outside(gate))
            assert await trio.to_thread.run_sync(gate.entered.wait, 10)
            nursery.start_soon(mine)
            await self._queued(counted)  # mine first, then its sibling: mine is replayed
            nursery.start_soon(sibling)
            await self._queued(failing)
            gate.opened.set()
        assert box.get("failed"), "the sibling request failed"
        return box["value"]

    async def _queued(self, fn: Callable[..., Any]) -> None:
        for _ in range(10_000):  # bounded: a few scheduler rounds at most
            if any(r.fn is fn for r in self._store._pending):  # the storage's mailbox
                return
            await trio.lowlevel.checkpoint()
        raise AssertionError("the request never reached the storage mailbox")


def _rows(path: Path) -> dict[str, Any]:
    """The stored outcome, IDs replaced by their order of appearance."""
    names: dict[str, str] = {}

    def name(value: object) -> object:
        if isinstance(value, str) and "_" in value and value.split("_")[0].isalpha():
            return names.setdefault(value, f"id{len(names)}")
        return value

    with sqlite3.connect(path) as conn:
        turns = conn.execute("SELECT turn_id, seq, state, revision, text FROM turns"
                             " ORDER BY seq").fetchall()  # fmt: skip
        items = conn.execute(
            "SELECT t.seq, i.seq, i.kind, i.state, i.text, i.truncated FROM turn_items i"
            " JOIN turns t USING (turn_id) ORDER BY t.seq, i.seq"
        ).fetchall()
        events = conn.execute("SELECT owner_id, owner_type, event_type, aggregate_revision"
                              " FROM events ORDER BY position").fetchall()  # fmt: skip
        session = conn.execute("SELECT state, activity, revision FROM sessions").fetchall()
        receipts = conn.execute("SELECT count(*) FROM receipts").fetchone()[0]
    return {
        "turns": [tuple(name(v) for v in row) for row in turns],
        "items": items,
        "events": [(name(row[0]), *row[1:]) for row in events],
        "session": session,
        "receipts": receipts,
    }


async def _scenario(tmp_path: Path, *, replay: bool) -> tuple[dict[str, Any], dict[str, Any]]:
    """Send `TEXTS` one after another on one Session; (rows, the actor's memory)."""
    async with (
        trio.open_nursery() as nursery,
        open_storage(tmp_path / "maia.db", clock=CLOCK, synchronous="NORMAL") as real,
    ):
        wrapped = SiblingFails(real)
        store = cast(Storage, wrapped) if replay else real
        workers = FakeWorkers(nursery)
        opened = open_session_runtime(store, clock=CLOCK, config=UserConfig(),
                                      worker_supervisor=workers)  # fmt: skip
        async with driven_clock(real), opened as runtime:
            h = Harness(store, runtime, workers, tmp_path)
            session_id = await h.session()
            turns = []
            for text in TEXTS:
                turn_id = await h.send(session_id, text)
                await h.wait_turn(turn_id, "completed", "failed")
                turns.append(turn_id)
            for turn_id in turns:  # the published snapshots are the rows
                stored = await real.read(partial(turn_view, turn_id=turn_id))
                assert runtime.notifier.turn(turn_id) == stored
            (actor,) = runtime.registry.live_actors()
            session = actor._batch.__self__  # type: ignore[union-attr]  # the SessionActor
            core = session.core
            memory = {
                "state": core.memory.state, "revision": core.memory.revision,
                "activity": core.memory.activity, "turns": len(core.memory.turns),
                "queue": (core.queue.active, core.queue.queued, core.queue.worker),
                "buffer": (session.progress.buffer.item, session.progress.buffer.started),
            }  # fmt: skip
        nursery.cancel_scope.cancel()
    if replay:
        replayed = sum(1 for runs in wrapped.runs.values() if runs == 2)
        assert replayed >= 2 * len(TEXTS), wrapped.runs  # each send and each end at least
        assert all(runs == 2 for runs in wrapped.runs.values()), wrapped.runs
    return _rows(tmp_path / "maia.db"), memory


@pytest.fixture
def jump_clock() -> trio.testing.MockClock:
    """Virtual time that only the test moves: `driven_clock` drives it while quiet."""
    return trio.testing.MockClock()


async def test_a_replayed_session_write_leaves_what_a_single_run_does(
    tmp_path: Path, jump_clock: trio.testing.MockClock
) -> None:
    """Every replayable Session write run twice (a failing sibling in its batch) leaves the
    same rows, events, receipts, snapshots and actor memory as runs without the failure."""
    (tmp_path / "plain").mkdir()
    (tmp_path / "replay").mkdir()
    plain = await _scenario(tmp_path / "plain", replay=False)
    replayed = await _scenario(tmp_path / "replay", replay=True)
    assert replayed == plain
    rows, memory = replayed
    assert [row[2] for row in rows["turns"]] == ["completed", "completed", "failed"]
    assert [item[2] for item in rows["items"]] == ["message", "message", "error"]
    assert memory["buffer"] == (None, None)
