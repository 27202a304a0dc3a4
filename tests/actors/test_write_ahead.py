"""Write-ahead transitions against the real storage actor on a temporary SQLite file."""

from __future__ import annotations

import math
import sqlite3
import threading
from collections.abc import AsyncIterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import trio

import storage
from actors import (
    SESSION_TABLE,
    ActorRegistry,
    Change,
    Lifecycle,
    SessionEvent,
    SessionState,
)
from maia.protocol import MaiaError, SystemClock

CLOCK = SystemClock()


def persist(conn: sqlite3.Connection, change: Change[Any, Any]) -> dict[str, Any]:
    """State row (compare-and-set on revision) + event + receipt, in the caller's transaction."""
    updated = conn.execute(
        "UPDATE sessions SET state = ?, revision = ?, updated_ms = ? "
        "WHERE session_id = ? AND revision = ?",
        (change.target.value, change.to_revision, change.now_ms, change.aggregate_id,
         change.from_revision),
    ).rowcount  # fmt: skip
    if updated != 1:
        details = {"resource": "session", "id": change.aggregate_id, "actual": -1}
        raise MaiaError("revision_conflict", f"session {change.aggregate_id} moved on", details)
    event = storage.append_event(
        conn, owner_id=change.aggregate_id, event_type=change.transition.emits or "",
        payload={"from": change.state.value, "to": change.target.value},
        now_ms=change.now_ms, aggregate_revision=change.to_revision,
        session_id=change.aggregate_id,
    )  # fmt: skip
    if change.transition.receipt:
        key = storage.MutationKey(
            "user", change.transition.event.value, f"cmd-{change.to_revision}"
        )
        storage.run_mutation(
            conn, key=key, input_digest="sha256:" + "0" * 64, now_ms=change.now_ms,
            apply=lambda _: storage.Applied({"state": change.target.value},
                                            event_ids=(event.event_id,)),
        )  # fmt: skip
    if change.payload == "explode":
        raise RuntimeError("the disk said no")  # after writing: the savepoint must undo it all
    return {"event": event.event_id}


def load(conn: sqlite3.Connection, session_id: str) -> tuple[SessionState, int]:
    row = storage.get_session(conn, session_id)
    return SessionState(row.state), row.revision


def counts(conn: sqlite3.Connection, session_id: str) -> tuple[str, int, int, int]:
    state, revision = conn.execute(
        "SELECT state, revision FROM sessions WHERE session_id = ?", (session_id,)
    ).fetchone()
    events = conn.execute("SELECT count(*) FROM events WHERE owner_id = ?", (session_id,))
    receipts = conn.execute("SELECT count(*) FROM receipts")
    return state, revision, events.fetchone()[0], receipts.fetchone()[0]


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[storage.Storage]:
    async with storage.open_storage(tmp_path / "maia.db", clock=CLOCK) as opened:
        now = CLOCK.wall_ms()

        def seed(conn: sqlite3.Connection) -> None:
            # Plain SQL with only the required columns: the row classes grow with issue 7.
            conn.execute(
                "INSERT INTO projects (project_id, project_key, root, created_ms, updated_ms)"
                " VALUES ('project_1', 'demo', ?, ?, ?)",
                (str(tmp_path), now, now),
            )
            for sid in ("session_1", "session_2"):
                conn.execute(
                    "INSERT INTO sessions (session_id, project_id, executor, state, created_ms,"
                    " updated_ms) VALUES (?, 'project_1', 'echo', 'idle', ?, ?)",
                    (sid, now, now),
                )

        await opened.write(seed)
        yield opened


def lifecycle(store: storage.Storage, sid: str = "session_1") -> Lifecycle[Any, Any]:
    return Lifecycle(SESSION_TABLE, aggregate_id=sid, state=SessionState.IDLE, revision=1,
                     store=store, persist=persist, clock=CLOCK)  # fmt: skip


async def test_commit_then_memory(store: storage.Storage) -> None:
    """A transition commits state row, event and receipt together, then memory moves."""
    life = lifecycle(store)
    await life.apply(SessionEvent.START, caller="node")
    assert (life.state, life.revision) == (SessionState.STARTING, 2)
    assert life.timeout_event is SessionEvent.START_FAILED
    await life.apply(SessionEvent.STOP, caller="client")
    assert await store.read(lambda c: counts(c, "session_1")) == ("stopping", 3, 2, 1)


async def test_failed_write_leaves_memory_and_storage(store: storage.Storage) -> None:
    """A persist that raises after writing rolls back everything; memory is unchanged."""
    life = lifecycle(store)
    with pytest.raises(RuntimeError, match="the disk said no"):
        await life.apply(SessionEvent.STOP, caller="client", payload="explode")
    assert (life.state, life.revision) == (SessionState.IDLE, 1)
    assert await store.read(lambda c: counts(c, "session_1")) == ("idle", 1, 0, 0)
    await life.apply(SessionEvent.STOP, caller="client")  # and it still works afterwards
    assert life.state is SessionState.STOPPED


async def test_memory_moves_only_after_commit(store: storage.Storage) -> None:
    """While the write is in flight in the writer thread, memory still shows the old state."""
    entered, release = threading.Event(), threading.Event()

    def slow_persist(conn: sqlite3.Connection, change: Change[Any, Any]) -> Any:
        result = persist(conn, change)
        entered.set()
        release.wait(30)
        return result

    life = Lifecycle(SESSION_TABLE, aggregate_id="session_1", state=SessionState.IDLE,
                     revision=1, store=store, persist=slow_persist, clock=CLOCK)  # fmt: skip
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(partial(life.apply, SessionEvent.START, caller="node"))
            await trio.to_thread.run_sync(entered.wait, 30)
            assert life.state is SessionState.IDLE
            assert life.revision == 1
            release.set()
    assert (life.state, life.revision) == (SessionState.STARTING, 2)


async def test_refusal_and_twin_write_change_nothing(store: storage.Storage) -> None:
    """A table refusal writes nothing; a stale twin's write fails its compare-and-set."""
    life = lifecycle(store)
    with pytest.raises(MaiaError) as info:
        await life.apply(SessionEvent.WORKER_READY, caller="worker")
    assert info.value.code == "invalid_state"
    twin = lifecycle(store)
    await life.apply(SessionEvent.START, caller="node")
    with pytest.raises(MaiaError) as info:
        await twin.apply(SessionEvent.STOP, caller="client")
    assert info.value.code == "revision_conflict"
    assert (twin.state, twin.revision) == (SessionState.IDLE, 1)
    assert await store.read(lambda c: counts(c, "session_1")) == ("starting", 2, 1, 0)


async def test_registry_rehydrates_from_storage(store: storage.Storage) -> None:
    """A passivated Session actor comes back with the state and revision storage holds."""

    async def spawn(sid: str) -> Any:
        state, revision = await store.read(lambda c: load(c, sid))
        life = Lifecycle(SESSION_TABLE, aggregate_id=sid, state=state, revision=revision,
                         store=store, persist=persist, clock=CLOCK)  # fmt: skip

        async def handle(message: tuple[SessionEvent, str]) -> tuple[str, int]:
            await life.apply(message[0], caller=message[1])
            return life.state.value, life.revision

        return handle

    registry: ActorRegistry[tuple[SessionEvent, str], tuple[str, int]] = ActorRegistry(
        "session", spawn, idle_s=math.inf
    )
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            await nursery.start(registry.serve)
            assert await registry.ask("session_2", (SessionEvent.START, "node")) == ("starting", 2)
            await trio.testing.wait_all_tasks_blocked()
            assert registry.passivate_idle(older_than_s=0) == 1
            assert not registry.is_live("session_2")
            answer = await registry.ask("session_2", (SessionEvent.WORKER_READY, "worker"))
            assert answer == ("running", 3)
            assert registry.statistics().spawned == 2
            nursery.cancel_scope.cancel()


class HungStore:
    """A store whose write never answers (a wedged disk): the outcome stays unknown."""

    async def write(self, fn: Any) -> Any:
        await trio.sleep_forever()


async def test_unknown_outcome_makes_lifecycle_stale(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """A write past its bound leaves memory unchanged and the lifecycle refusing until reload."""
    life: Lifecycle[Any, Any] = Lifecycle(
        SESSION_TABLE, aggregate_id="session_9", state=SessionState.IDLE, revision=1,
        store=HungStore(), persist=persist, clock=CLOCK, write_bound_s=10,
    )  # fmt: skip
    with trio.CancelScope() as outer:
        outer.cancel()  # a cancelled caller does not cut the write short: it is shielded
        with pytest.raises(MaiaError) as info:
            await life.apply(SessionEvent.START, caller="node")
    assert info.value.code == "unavailable"
    assert (life.state, life.revision, life.stale) == (SessionState.IDLE, 1, True)
    with pytest.raises(MaiaError) as info:
        await life.apply(SessionEvent.STOP, caller="client")
    assert info.value.code == "unavailable"
