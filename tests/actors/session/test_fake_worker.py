"""The Session actor on `MockClock` through the worker seam (an in-process stand-in for the
worker supervisor, tests/actors/session/_fake_workers.py): real storage, no subprocesses,
minutes of idle time in milliseconds. The real-process tests are in test_actor.py."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

from maia.config import UserConfig
from supervision.workers import WorkerState

from ._harness import Harness
from ._harness import open_harness as _open

IDLE_MS = UserConfig().sessions.worker_idle_ms


@pytest.fixture
def jump_clock() -> trio.testing.MockClock:
    """Virtual time that only the test moves: no autojump; `_open` drives it while quiet."""
    return trio.testing.MockClock()


async def test_turns_run_in_order_and_an_idle_worker_is_released(
    tmp_path: Path, jump_clock: trio.testing.MockClock
) -> None:
    """Three turns run on one worker in send order; a minute of idleness later the worker
    is released (the Session is idle between turns: activity idle while its worker is warm,
    stopped once it is released), all in mock time."""
    async with _open(tmp_path) as h:
        session_id = await h.session()
        turns = [await h.send(session_id, f"hello {n}") for n in range(3)]
        done = [await h.wait_turn(t, "completed", "failed") for t in turns]
        assert [t.output_text for t in done] == ["hello 0", "hello 1", "hello 2"]
        assert len(h.workers.spawned) == 1
        assert h.workers.spawned[0].prompts == ["hello 0", "hello 1", "hello 2"]
        assert await h.session_row(session_id) == ("idle", "idle")
        await trio.sleep(IDLE_MS / 1000 + 5)
        assert h.workers.spawned[0].state is WorkerState.EXITED
        assert await h.session_row(session_id) == ("idle", "stopped")


async def _session_events(h: Harness, session_id: str) -> list[str]:
    """The Session's lifecycle events in order (not its activity or status changes)."""
    query = (
        "SELECT event_type FROM events WHERE owner_id = ? AND event_type LIKE 'session.%'"
        " AND event_type NOT LIKE 'session.%.changed' ORDER BY position"
    )
    rows = await h.store.read(lambda c: c.execute(query, (session_id,)).fetchall())
    return [row[0] for row in rows]


async def test_a_warm_idle_session_goes_straight_to_running(
    tmp_path: Path, jump_clock: trio.testing.MockClock
) -> None:
    """Idle means no activation holds the lease: a turn that ends with none after it leaves
    the Session idle with its worker warm; the next turn runs on that worker with no start
    (idle -> running), back-to-back queued turns keep it running, and it settles idle."""
    async with _open(tmp_path) as h:
        session_id = await h.session()
        await h.wait_turn(await h.send(session_id, "one"), "completed")
        assert await h.session_row(session_id) == ("idle", "idle")
        assert await _session_events(h, session_id) == [
            "session.starting", "session.running", "session.idle"]  # fmt: skip
        slow = await h.send(session_id, "/sleep 1000 two")
        await h.wait_turn(slow, "running")
        assert await h.session_row(session_id) == ("running", "working")
        last = await h.send(session_id, "three")
        await h.wait_turn(last, "completed")
        assert len(h.workers.spawned) == 1
        assert await _session_events(h, session_id) == [
            "session.starting", "session.running", "session.idle",
            "session.running", "session.idle"]  # fmt: skip
        assert await h.session_row(session_id) == ("idle", "idle")


async def test_a_lost_worker_fails_its_turn_and_the_next_turn_gets_a_new_one(
    tmp_path: Path, jump_clock: trio.testing.MockClock
) -> None:
    """A worker lost mid-turn fails that turn (never re-run); the next send starts a new
    attempt, which completes."""
    async with _open(tmp_path) as h:
        session_id = await h.session()
        crashed = await h.wait_turn(await h.send(session_id, "/crash"), "failed", "completed")
        assert crashed.state == "failed"
        after = await h.wait_turn(await h.send(session_id, "again"), "completed", "failed")
        assert after.output_text == "again"
        assert len(h.workers.spawned) == 2


async def test_a_worker_whose_runtime_is_lost_fails_its_turn_runtime_lost(
    tmp_path: Path, jump_clock: trio.testing.MockClock
) -> None:
    """A worker ending with the exit reason `runtime_lost` (the machine relay's, when its
    Execution Node is lost) fails its turn `runtime_lost`, as a Node restart does, not
    `worker_failed`; the turn's message says why and the next turn gets a new worker."""
    async with _open(tmp_path) as h:
        session_id = await h.session()
        lost = await h.wait_turn(await h.send(session_id, "/runtime-lost"), "failed", "completed")
        assert (lost.state, lost.failure_reason) == ("failed", "runtime_lost")
        assert "runtime_lost" in (lost.failure_message or "")
        crashed = await h.wait_turn(await h.send(session_id, "/crash"), "failed", "completed")
        assert crashed.failure_reason == "worker_failed"  # any other exit: as before
        after = await h.wait_turn(await h.send(session_id, "again"), "completed", "failed")
        assert after.output_text == "again"
        assert len(h.workers.spawned) == 3


async def test_a_sleeping_turn_waits_in_mock_time_and_the_queue_keeps_its_order(
    tmp_path: Path, jump_clock: trio.testing.MockClock
) -> None:
    """A sleeping turn waits in mock time; the next queued turn runs after it, in order."""
    async with _open(tmp_path) as h:
        session_id = await h.session()
        slow = await h.send(session_id, "/sleep 30000 slow")
        fast = await h.send(session_id, "fast")
        first = await h.wait_turn(slow, "completed", "failed")
        second = await h.wait_turn(fast, "completed", "failed")
        assert (first.output_text, second.output_text) == ("slow", "fast")
        assert (first.completed_at or "") <= (second.started_at or "")


async def test_a_session_holding_a_worker_is_not_passivated(
    tmp_path: Path, jump_clock: trio.testing.MockClock
) -> None:
    """Its worker's launch effect vetoes passivation (no keep-alive messages); once the
    worker is released the idle Session actor is passivated."""
    async with _open(tmp_path, passivate_after_s=10.0) as h:
        session_id = await h.session()
        await h.wait_turn(await h.send(session_id, "hi"), "completed")
        await trio.sleep(40)  # idle, but its worker is still held (released after a minute)
        assert h.runtime.registry.is_live(session_id)
        await trio.sleep(IDLE_MS / 1000 + 40)
        assert not h.runtime.registry.is_live(session_id)
        assert h.runtime.registry.statistics().passivated_idle == 1


async def test_an_effect_that_raises_crashes_the_actor_which_restarts_logged(
    tmp_path: Path, jump_clock: trio.testing.MockClock, caplog: pytest.LogCaptureFixture
) -> None:
    """A bug in an effect (the worker's stream raises) crashes only that Session's actor:
    the traceback is logged, the actor restarts from storage, the turn it ran fails
    runtime_lost and the next turn runs on a new worker. Nothing is swallowed."""
    caplog.set_level(logging.WARNING)
    async with _open(tmp_path) as h:
        session_id = await h.session()
        other = await h.session()
        h.workers.explode_on = "explode"
        lost = await h.send(session_id, "explode")
        failed = await h.wait_turn(lost, "failed", "completed")
        assert failed.failure_reason == "runtime_lost"
        after = await h.wait_turn(await h.send(session_id, "after"), "completed", "failed")
        assert after.output_text == "after"
        fine = await h.wait_turn(await h.send(other, "unharmed"), "completed", "failed")
        assert fine.output_text == "unharmed"
        assert h.runtime.registry.statistics().crashed == 1
    crash = [r for r in caplog.records if r.getMessage().startswith("actor session/")]
    assert len(crash) == 1
    assert crash[0].exc_info is not None
    assert "the worker's stream broke" in caplog.text


def _state(worker: Any) -> WorkerState:
    return worker.state  # type: ignore[no-any-return]


async def _timers(h: Harness) -> list[tuple[Any, ...]]:
    return list(
        await h.store.read(
            lambda c: c.execute(
                "SELECT kind, actor_id, name, subject_id, due_wall_ms FROM actor_timers"
                " ORDER BY name"
            ).fetchall()
        )
    )


async def test_wall_time_and_idle_release_are_durable_timers(
    tmp_path: Path, jump_clock: trio.testing.MockClock
) -> None:
    """A running turn's wall time is a timer row of its Session (armed at dispatch, left
    to fire as a no-op after the turn: `_lazy_wakes`); the idle worker's release is a row
    due a minute after the turn ended, the worker is released when it fires, not before,
    and no row is left once it is gone."""
    async with _open(tmp_path) as h:
        session_id = await h.session()
        slow = await h.send(session_id, "/sleep 30000 slow")
        await h.wait_turn(slow, "running")
        limit = UserConfig().capacity.max_wall_time_ms_per_activation
        (wall,) = await _timers(h)
        dispatched = await h.store.read(lambda c: c.execute(
            "SELECT occurred_ms FROM events WHERE event_type = 'turn.dispatching'"
        ).fetchone()[0])  # fmt: skip
        assert wall == ("session", session_id, "wall-time", slow, dispatched + limit)
        await h.wait_turn(slow, "completed")
        finished = await h.store.read(lambda c: c.execute(
            "SELECT finished_ms FROM turns WHERE turn_id = ?", (slow,)).fetchone()[0])  # fmt: skip
        assert await _timers(h) == [
            ("session", session_id, "idle-release", None, finished + IDLE_MS),
            wall,
        ]
        await trio.sleep(IDLE_MS / 1000 - 1)
        (worker,) = h.workers.spawned
        assert worker.state is WorkerState.READY  # a second before its release
        await trio.sleep(6)
        assert _state(worker) is WorkerState.EXITED
        assert await _timers(h) == []
        assert await h.session_row(session_id) == ("idle", "stopped")


async def test_a_later_turn_writes_no_timer_row_and_keeps_its_own_wall_time(
    tmp_path: Path, jump_clock: trio.testing.MockClock
) -> None:
    """A second turn on a warm worker writes no timer row (the first turn's wall-time row
    fires sooner); when it fires the row is armed again for the running turn's own
    deadline, and that turn fails wall_time_exceeded at it, not at the first turn's."""
    limit = UserConfig().capacity.max_wall_time_ms_per_activation
    async with _open(tmp_path) as h:
        session_id = await h.session()
        first = await h.send(session_id, "quick")
        await h.wait_turn(first, "completed")
        before = await _timers(h)
        await trio.sleep(10)  # the second turn is dispatched 10 s later
        slow = await h.send(session_id, f"/sleep {2 * limit} slow")
        await h.wait_turn(slow, "running")
        assert await _timers(h) == before  # nothing armed, nothing replaced
        dispatched = await h.store.read(lambda c: c.execute(
            "SELECT occurred_ms FROM events WHERE event_type = 'turn.dispatching'"
            " ORDER BY position DESC LIMIT 1").fetchone()[0])  # fmt: skip
        await trio.sleep(limit / 1000 - 5)  # past the first turn's deadline
        assert await _timers(h) == [("session", session_id, "wall-time", slow, dispatched + limit)]
        failed = await h.wait_turn(slow, "failed", "completed")
        assert failed.failure_reason == "wall_time_exceeded"
        finished = await h.store.read(lambda c: c.execute(
            "SELECT finished_ms FROM turns WHERE turn_id = ?", (slow,)).fetchone()[0])  # fmt: skip
        assert dispatched + limit <= finished < dispatched + limit + 60_000


async def test_an_idle_release_armed_for_an_earlier_turn_is_armed_again_for_the_last(
    tmp_path: Path, jump_clock: trio.testing.MockClock
) -> None:
    """The idle release armed when the first turn ended is not moved by a second turn's end
    (no row written); when it fires the worker is kept and the release armed again for a
    minute after the second turn, when the worker is released."""
    async with _open(tmp_path) as h:
        session_id = await h.session()
        await h.wait_turn(await h.send(session_id, "first"), "completed")
        (idle, _) = await _timers(h)
        await trio.sleep(30)
        second = await h.send(session_id, "second")
        await h.wait_turn(second, "completed")
        query = "SELECT finished_ms FROM turns WHERE turn_id = ?"
        finished = await h.store.read(lambda c: c.execute(query, (second,)).fetchone()[0])
        assert (await _timers(h))[0] == idle  # still the first turn's
        await trio.sleep(IDLE_MS / 1000 - 30 + 1)  # past the first turn's release
        (worker,) = h.workers.spawned
        assert worker.state is WorkerState.READY
        timers = await _timers(h)
        assert ("session", session_id, "idle-release", None, finished + IDLE_MS) in timers
        await trio.sleep(40)
        assert _state(worker) is WorkerState.EXITED
        assert await _timers(h) == []
