"""The Session actor on a real SQLite file with real echo worker subprocesses (real clock)."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import psutil
import pytest
import trio

from actors.session import (
    CancelTurn,
    Command,
    InterruptTurn,
    SendTurn,
    SessionRuntime,
    StopSession,
    turn_view,
)
from maia.config import UserConfig, parse_user_config
from maia.protocol import MaiaError, SystemClock, Turn, new_id
from storage import Storage, open_storage
from supervision.workers import WorkerTimings
from tests.actors.session._open import open_session_runtime

TIMINGS = WorkerTimings(interrupt_ms=2000, terminate_ms=1000, kill_wait_ms=2000)


def _seed(conn: sqlite3.Connection, root: str, session_id: str, executor: str) -> None:
    conn.execute(
        "INSERT OR IGNORE INTO projects (project_id, project_key, root, revision, created_ms,"
        " updated_ms) VALUES ('project_t', 'tests', ?, 1, 0, 0)",
        (root,),
    )
    conn.execute(
        "INSERT INTO sessions (session_id, project_id, executor, cwd, state, created_ms,"
        " updated_ms) VALUES (?, 'project_t', ?, ?, 'idle', 0, 0)",
        (session_id, executor, root),
    )


class Harness:
    def __init__(self, store: Storage, runtime: SessionRuntime, root: Path) -> None:
        self.store = store
        self.runtime = runtime
        self.root = root

    async def session(self, executor: str = "builtin:echo") -> str:
        session_id = new_id("session")
        await self.store.write(lambda c: _seed(c, str(self.root), session_id, executor))
        return session_id

    async def send(self, session_id: str, text: str, command_id: str | None = None) -> Any:
        command = Command(command_id or new_id("command"), "local-user", f"sha256:{text}")
        return await self.runtime.ask(session_id, SendTurn(command, text))

    async def turn(self, turn_id: str) -> Turn:
        return await self.store.read(lambda c: turn_view(c, turn_id))

    async def wait_turn(self, turn_id: str, *states: str) -> Turn:
        with trio.fail_after(20):
            while True:
                turn = await self.turn(turn_id)
                if turn.state in states:
                    return turn
                await self.runtime.notifier.wait(turn_id, 0.2)


@asynccontextmanager
async def _open(tmp_path: Path, config: UserConfig) -> AsyncIterator[Harness]:
    async with (
        open_storage(tmp_path / "maia.db", clock=SystemClock(), synchronous="NORMAL") as store,
        open_session_runtime(store, clock=SystemClock(), config=config, timings=TIMINGS) as rt,
    ):
        yield Harness(store, rt, tmp_path)


@pytest.fixture
async def harness(tmp_path: Path) -> AsyncIterator[Harness]:
    async with _open(tmp_path, UserConfig()) as h:
        yield h


async def test_three_turns_complete_in_order_with_their_text(harness: Harness) -> None:
    """Three sends to one Session run on one echo worker, in order, each echoing its text."""
    session_id = await harness.session()
    results = [await harness.send(session_id, f"hello {n}") for n in range(3)]
    turn_ids = [r.result["turn"]["turnId"] for r in results]
    assert [r.result["position"] for r in results] == [0, 1, 2]
    turns = [await harness.wait_turn(t, "completed", "failed") for t in turn_ids]
    assert [t.output_text for t in turns] == ["hello 0", "hello 1", "hello 2"]
    assert [t.state for t in turns] == ["completed"] * 3
    finished = [t.completed_at or "" for t in turns]
    assert finished == sorted(finished)
    seqs = await harness.store.read(
        lambda c: [r[0] for r in c.execute(
            "SELECT owner_seq FROM events WHERE owner_id = ? ORDER BY position", (session_id,)
        )]
    )  # fmt: skip
    assert seqs == list(range(1, len(seqs) + 1))


async def test_queue_limit_cancel_and_interrupt(harness: Harness) -> None:
    """Nine sends: the ninth is turn_queue_full; a queued turn cancels; the running one is
    turn_not_queued and can be interrupted."""
    session_id = await harness.session()
    first = await harness.send(session_id, "/sleep 30000 slow")
    queued = [await harness.send(session_id, f"q{n}") for n in range(7)]
    with pytest.raises(MaiaError) as full:
        await harness.send(session_id, "ninth")
    assert full.value.code == "turn_queue_full"
    running_id = first.result["turn"]["turnId"]
    await harness.wait_turn(running_id, "running")
    last = queued[-1].result["turn"]
    command = Command(new_id("command"), "local-user", "sha256:c1")
    cancelled = await harness.runtime.ask(
        session_id, CancelTurn(command, last["turnId"], last["revision"])
    )
    assert cancelled.result["turn"]["state"] == "failed"
    assert cancelled.result["turn"]["failureReason"] == "turn_rejected"
    with pytest.raises(MaiaError) as not_queued:
        await harness.runtime.ask(
            session_id,
            CancelTurn(Command(new_id("command"), "local-user", "sha256:c2"), running_id, 2),
        )
    assert not_queued.value.code == "turn_not_queued"
    command = Command(new_id("command"), "local-user", "sha256:i")
    await harness.runtime.ask(session_id, InterruptTurn(command, running_id, None))
    interrupted = await harness.wait_turn(running_id, "interrupted", "failed", "completed")
    assert interrupted.state == "interrupted"
    second = await harness.wait_turn(queued[0].result["turn"]["turnId"], "completed")
    assert second.output_text == "q0"


def _counts(conn: sqlite3.Connection) -> tuple[int, ...]:
    return tuple(conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
                 for table in ("turns", "events", "receipts"))  # fmt: skip


async def test_a_refused_lone_send_writes_nothing_and_may_run_later(harness: Harness) -> None:
    """A send applied alone (no savepoint of its own) and refused, turn_queue_full: no turn,
    event or receipt; once the queue has room the same command runs (not remembered)."""
    session_id = await harness.session()
    first = (await harness.send(session_id, "/sleep 30000 slow")).result["turn"]["turnId"]
    for n in range(7):
        await harness.send(session_id, f"q{n}")
    before = await harness.store.read(_counts)
    with pytest.raises(MaiaError) as full:
        await harness.send(session_id, "ninth", command_id="command_ninth")
    assert full.value.code == "turn_queue_full"
    assert await harness.store.read(_counts) == before
    await harness.wait_turn(first, "running")
    command = Command(new_id("command"), "local-user", "sha256:i")
    await harness.runtime.ask(session_id, InterruptTurn(command, first, None))
    await harness.wait_turn(first, "interrupted", "failed", "completed")
    again = await harness.send(session_id, "ninth", command_id="command_ninth")
    assert again.delivery == "new"
    ninth = await harness.wait_turn(again.result["turn"]["turnId"], "completed")
    assert ninth.output_text == "ninth"


async def test_same_command_is_a_duplicate(harness: Harness) -> None:
    """The same commandId and input answers the stored result, queueing nothing more."""
    session_id = await harness.session()
    one = await harness.send(session_id, "once", command_id="command_same")
    two = await harness.send(session_id, "once", command_id="command_same")
    assert (one.delivery, two.delivery) == ("new", "duplicate")
    assert one.result == two.result
    with pytest.raises(MaiaError) as conflict:
        await harness.send(session_id, "other", command_id="command_same")
    assert conflict.value.code == "idempotency_conflict"
    count = await harness.store.read(
        lambda c: c.execute("SELECT count(*) FROM turns WHERE session_id = ?", (session_id,))
        .fetchone()[0]
    )  # fmt: skip
    assert count == 1


async def test_stop_rejects_queue_and_stops_worker(harness: Harness) -> None:
    """session.stop rejects queued turns, stops the worker, and the Session reads stopped."""
    session_id = await harness.session()
    first = await harness.send(session_id, "/sleep 30000 slow")
    second = await harness.send(session_id, "never")
    await harness.wait_turn(first.result["turn"]["turnId"], "running")
    command = Command(new_id("command"), "local-user", "sha256:stop")
    await harness.runtime.ask(session_id, StopSession(command, None))
    rejected = await harness.wait_turn(second.result["turn"]["turnId"], "failed")
    assert rejected.failure_reason == "turn_rejected"
    with trio.fail_after(20):
        while (await harness.store.read(
            lambda c: c.execute("SELECT state FROM sessions WHERE session_id = ?",
                                (session_id,)).fetchone()[0]
        )) != "stopped":  # fmt: skip
            await harness.runtime.notifier.wait(session_id, 0.2)
    assert harness.runtime.live_workers() == 0
    with pytest.raises(MaiaError) as refused:
        await harness.send(session_id, "after stop")
    assert refused.value.code == "invalid_state"


async def _send_retrying(h: Harness, session_id: str, text: str) -> Any:
    """Send, retrying while the answer is the retryable `saturated`."""
    with trio.fail_after(20):
        while True:
            try:
                return await h.send(session_id, text)
            except MaiaError as error:
                if error.code != "saturated":
                    raise
            await trio.sleep(0.05)


async def test_live_session_limit_is_saturated(tmp_path: Path) -> None:
    """With maxLiveSessions 1, a second Session's first send is saturated (retryable); once
    the first Session's worker is idle, a refused send reclaims it and the retry runs."""
    config = parse_user_config({"swarm": {"capacity": {"maxLiveSessions": 1}}})
    async with _open(tmp_path, config) as h:
        one, two, three = await h.session(), await h.session(), await h.session()
        await h.send(one, "/sleep 30000 busy")
        with pytest.raises(MaiaError) as caught:
            await h.send(two, "waiting")
        assert caught.value.code == "saturated"
        assert caught.value.retryable
        await h.send(one, "/stop-sleeping")  # queued behind: still one worker
        session_turns = await h.store.read(
            lambda c: [r[0] for r in c.execute(
                "SELECT turn_id FROM turns WHERE session_id = ? ORDER BY seq", (one,))]
        )  # fmt: skip
        await h.wait_turn(session_turns[0], "running")
        command = Command(new_id("command"), "local-user", "sha256:i")
        await h.runtime.ask(one, InterruptTurn(command, session_turns[0], None))
        await h.wait_turn(session_turns[1], "completed")
        # One's worker is idle now: a send elsewhere frees it and the retry gets the slot.
        sent = await _send_retrying(h, three, "my turn")
        done = await h.wait_turn(sent.result["turn"]["turnId"], "completed")
        assert done.output_text == "my turn"


async def test_cancelled_runtime_still_stops_its_workers(tmp_path: Path) -> None:
    """Leaving the runtime by cancellation stops its live worker boundedly, without hanging."""
    pids: list[int] = []
    with trio.fail_after(30):
        with trio.CancelScope() as scope:
            async with _open(tmp_path, UserConfig()) as h:
                session_id = await h.session()
                sent = await h.send(session_id, "/sleep 30000 busy")
                await h.wait_turn(sent.result["turn"]["turnId"], "running")
                pids = [w.pid for w in h.runtime.workers.live()]
                scope.cancel()
                await trio.sleep_forever()
    assert pids
    for pid in pids:
        with contextlib.suppress(psutil.NoSuchProcess):
            assert psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


async def test_exec_executor_runs_a_command_and_enforces_wall_time(tmp_path: Path) -> None:
    """An exec executor pipes the prompt through its argv; one past its wall time fails
    wall_time_exceeded; a failing command fails the turn with the worker's message."""
    config = parse_user_config(
        {
            "executors": {
                "upper": {"kind": "exec", "argv": ["/usr/bin/tr", "a-z", "A-Z"]},
                "slow": {"kind": "exec", "argv": ["/bin/sleep", "60"], "wallTimeMs": 1000},
                "false": {"kind": "exec", "argv": ["/bin/false"]},
            }
        }
    )
    async with _open(tmp_path, config) as h:
        upper = await h.session("user:upper")
        sent = await h.send(upper, "make me loud")
        done = await h.wait_turn(sent.result["turn"]["turnId"], "completed", "failed")
        assert done.output_text == "MAKE ME LOUD"
        slow = await h.session("user:slow")
        sent = await h.send(slow, "never answered")
        failed = await h.wait_turn(sent.result["turn"]["turnId"], "completed", "failed")
        assert failed.state == "failed"
        assert failed.failure_reason == "wall_time_exceeded"
        broken = await h.session("user:false")
        sent = await h.send(broken, "anything")
        refused = await h.wait_turn(sent.result["turn"]["turnId"], "completed", "failed")
        assert refused.failure_reason == "turn_failed"
        assert refused.failure_message


async def test_stop_while_the_worker_starts(harness: Harness) -> None:
    """A stop right after the first send (worker still starting) rejects the turn, stops the
    worker once it is up, and the Session reads stopped with no worker left."""
    session_id = await harness.session()
    sent = await harness.send(session_id, "too late")
    command = Command(new_id("command"), "local-user", "sha256:stop")
    stopped = await harness.runtime.ask(session_id, StopSession(command, None))
    assert stopped.result["session"]["state"] in ("stopping", "stopped")
    assert "activity" not in stopped.result["session"]
    rejected = await harness.wait_turn(sent.result["turn"]["turnId"], "failed")
    assert rejected.failure_reason == "turn_rejected"
    with trio.fail_after(20):
        while (
            await harness.store.read(
                lambda c: c.execute(
                    "SELECT state FROM sessions WHERE session_id = ?", (session_id,)
                ).fetchone()[0]
            )
            != "stopped"
        ) or harness.runtime.live_workers():
            await harness.runtime.notifier.wait(session_id, 0.2)


async def test_an_actor_that_dies_mid_turn_is_rehydrated(harness: Harness) -> None:
    """If a Session's actor dies while its turn runs, the next message rehydrates it: the
    turn fails runtime_lost (never re-run), the old worker is stopped, new turns run."""
    session_id = await harness.session()
    first = await harness.send(session_id, "/sleep 30000 never")
    await harness.wait_turn(first.result["turn"]["turnId"], "running")
    old = [w.pid for w in harness.runtime.workers.live()]
    actor = await harness.runtime.registry.get(session_id)
    actor.close(drain=False)  # stands in for a crash: the actor is gone, its worker is not
    await actor.wait_stopped()
    second = await harness.send(session_id, "after")
    lost = await harness.wait_turn(first.result["turn"]["turnId"], "failed")
    assert lost.failure_reason == "runtime_lost"
    done = await harness.wait_turn(second.result["turn"]["turnId"], "completed")
    assert done.output_text == "after"
    live = [w.pid for w in harness.runtime.workers.live()]
    with trio.fail_after(20):
        while set(old) & set(live):
            await trio.sleep(0.05)
            live = [w.pid for w in harness.runtime.workers.live()]
