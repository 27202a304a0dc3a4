"""Attempts an earlier Control run left live on a machine (`actors.machine._recovered`), on
real storage: their Sessions read `attempt_live`; each hello of the machine asks it again to
stop them until it reports them gone, even when the link blips before it does; a machine
that never reports leaves a new worker `held` after the reconcile bound, not placed beside
the old one (spec MN0 item 10). End to end on two real Nodes:
tests/review8c/test_control_kill_mid_placed_turn.py."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import trio
import trio.testing

from actors.machine import MachineRelay, RecoveredAttempt, StopWorkerFrame, WorkerFrame
from actors.machine._links import LinkBoard
from actors.machine._recovered import REASK_S
from actors.machine._relay import PLACEMENT_WAIT_S, RECONCILE_WAIT_S
from actors.session import recover_sessions
from maia.core import FakeClock, MaiaError
from maia.protocol import SystemClock
from storage import Storage, open_storage
from supervision.workers import WorkerSpec

MACHINE, ASSIGNMENT, SESSION, ATTEMPT = "machine_b", "assignment_b", "session_b", "attempt_b"


def _seed(conn: sqlite3.Connection, root: str) -> None:
    """A Session placed on `machine_b` whose attempt an earlier run (node epoch 0) opened."""
    conn.execute("INSERT INTO projects (project_id, project_key, root, revision, created_ms,"
                 " updated_ms) VALUES ('project_b', 'blip', ?, 1, 0, 0)", (root,))  # fmt: skip
    conn.execute("INSERT INTO sessions (session_id, project_id, executor, cwd, state,"
                 " created_ms, updated_ms) VALUES (?, 'project_b', 'user:slow', ?, 'idle', 0, 0)",
                 (SESSION, root))  # fmt: skip
    conn.execute("INSERT INTO machine_assignments (assignment_id, machine_id, project_id,"
                 " phase, created_ms, updated_ms) VALUES (?, ?, 'project_b', 'running', 0, 0)",
                 (ASSIGNMENT, MACHINE))  # fmt: skip
    conn.execute("INSERT INTO machine_placements (session_id, assignment_id, created_ms)"
                 " VALUES (?, ?, 0)", (SESSION, ASSIGNMENT))  # fmt: skip
    conn.execute("INSERT INTO worker_attempts (attempt_id, session_id, epoch, node_epoch, state,"
                 " pid, started_ms) VALUES (?, ?, 1, 0, 'running', 4242, 0)",
                 (ATTEMPT, SESSION))  # fmt: skip


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[Storage]:
    async with open_storage(tmp_path / "maia.db", clock=SystemClock()) as opened:
        await opened.write(lambda conn: _seed(conn, str(tmp_path)))
        yield opened


async def _end(store: Storage) -> tuple[object, object]:
    rows = await store.read(lambda conn: conn.execute(
        "SELECT ended_ms, end_reason FROM worker_attempts WHERE attempt_id = ?",
        (ATTEMPT,)).fetchall())  # fmt: skip
    return rows[0][0], rows[0][1]


class Link:
    """One connection of the machine: what Control sent on it; `up` False once it dropped."""

    def __init__(self, board: LinkBoard) -> None:
        self.sent: list[object] = []
        self.up = True
        self.state = board.open(MACHINE, lambda: None, self.send)

    async def send(self, frame: object) -> None:
        if not self.up:
            raise ConnectionError("the link dropped")
        self.sent.append(frame)

    def stops(self) -> list[str]:
        return [f.reason for f in self.sent if isinstance(f, StopWorkerFrame)]


async def test_the_stop_is_asked_again_at_every_hello_until_the_node_reports_it_gone(
    store: Storage,
) -> None:
    """Loaded at start the attempt holds its Session; a hello listing it gets a stop
    (control_restarted); the link drops before the exit is heard, so the next hello asks
    again (a hello on a link already down is asked at the one after); the `exited` frame
    closes the row, and the Session is free."""
    relay = MachineRelay(store, SystemClock(), LinkBoard())
    await relay.recovered.load()
    assert relay.recovered.attempts == {
        ATTEMPT: RecoveredAttempt(ATTEMPT, SESSION, ASSIGNMENT, MACHINE)
    }
    assert "attempt_live" in relay.blockers(ASSIGNMENT, SESSION)
    assert "attempt_live" not in relay.blockers(ASSIGNMENT, "session_other")

    first = Link(relay.links)
    await relay.on_hello(MACHINE, [ATTEMPT])
    assert first.stops() == ["control_restarted"]
    first.up = False  # the blip: no exit heard on this link
    relay.links.drop(first.state)

    down = Link(relay.links)
    down.up = False  # dropped again before the hello's stop could go
    await relay.on_hello(MACHINE, [ATTEMPT])
    relay.links.drop(down.state)
    assert (await _end(store))[0] is None
    assert "attempt_live" in relay.blockers(ASSIGNMENT, SESSION)

    second = Link(relay.links)
    await relay.on_hello(MACHINE, [ATTEMPT])
    assert second.stops() == ["control_restarted"]
    assert relay.recovered.stops_asked == 2
    await relay.on_frame("machine_other", WorkerFrame("worker", ATTEMPT, "exited"))
    assert (await _end(store))[0] is None  # another machine cannot end it
    await relay.on_frame(MACHINE, WorkerFrame("worker", ATTEMPT, "exited", returncode=-15))
    ended, reason = await _end(store)
    assert ended is not None
    assert reason == "control_restarted: stopped by the Execution Node"
    assert "attempt_live" not in relay.blockers(ASSIGNMENT, SESSION)
    await relay.on_hello(MACHINE, [])
    assert second.stops() == ["control_restarted"]  # nothing left to ask for


async def test_an_attempt_the_hello_does_not_list_is_closed_at_once(store: Storage) -> None:
    """The Execution Node runs no such attempt (it stopped it at its lease deadline, or
    restarted): the row ends at the hello, no stop is sent, the Session is free."""
    relay = MachineRelay(store, SystemClock(), LinkBoard())
    await relay.recovered.load()
    link = Link(relay.links)
    await relay.on_hello(MACHINE, ["attempt_someone_else"])
    assert link.stops() == []
    ended, reason = await _end(store)
    assert ended is not None
    assert str(reason).startswith("control_restarted")
    assert "attempt_live" not in relay.blockers(ASSIGNMENT, SESSION)


async def test_a_new_worker_waits_the_reconcile_bound_then_is_held(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """A machine that never reports the old attempt gone: the Session's new worker is not
    launched; it is `held` (attempt_live) once the reconcile bound passed, not the shorter
    placement wait another Session gets."""
    relay = MachineRelay(None, SystemClock(), LinkBoard())
    relay.recovered.attempts[ATTEMPT] = RecoveredAttempt(ATTEMPT, SESSION, ASSIGNMENT, MACHINE)
    for session, bound in ((SESSION, RECONCILE_WAIT_S), ("session_other", PLACEMENT_WAIT_S)):
        spec = WorkerSpec(argv=("/bin/true",), cwd="/", activation={"sessionId": session})
        started = trio.current_time()
        with pytest.raises(MaiaError) as raised:
            await relay.start_remote(ASSIGNMENT, spec)
        waited = trio.current_time() - started
        assert raised.value.code == "held"
        assert bound <= waited < bound + 1
        assert ("attempt_live" in raised.value.message) is (session == SESSION)
    assert RECONCILE_WAIT_S == 70.0
    assert relay.handles == {}


async def test_session_recovery_keeps_a_placed_attempt_open_and_closes_a_local_one(
    tmp_path: Path,
) -> None:
    """At a Control start the placed Session's attempt stays open (its worker may still run
    on the machine, and its pid is the machine's: never swept here); a local Session's
    attempt ends `node_restarted` as before."""

    def local(conn: sqlite3.Connection) -> None:
        _seed(conn, str(tmp_path))
        conn.execute("INSERT INTO sessions (session_id, project_id, executor, cwd, state,"
                     " created_ms, updated_ms) VALUES ('session_l', 'project_b', 'builtin:echo',"
                     " ?, 'idle', 0, 0)", (str(tmp_path),))  # fmt: skip
        conn.execute(
            "INSERT INTO worker_attempts (attempt_id, session_id, epoch, node_epoch,"
            " state, started_ms) VALUES ('attempt_l', 'session_l', 2, 0, 'running', 0)"
        )

    async with open_storage(tmp_path / "maia.db", clock=SystemClock()) as opened:
        await opened.write(local)
        report = await recover_sessions(opened, SystemClock().wall_ms())
        rows = await opened.read(lambda conn: conn.execute(
            "SELECT attempt_id, ended_ms IS NULL, end_reason FROM worker_attempts"
            " ORDER BY epoch").fetchall())  # fmt: skip
    assert rows == [(ATTEMPT, 1, None), ("attempt_l", 0, "node_restarted")]
    assert report.workers_killed == 0


async def test_a_stop_lost_on_a_link_that_stays_up_is_asked_again(store: Storage) -> None:
    """The hello's stop is lost but the link stays up (no new hello comes): the machine's
    statuses (heartbeats) ask again once REASK_S passed since the last ask, and stop asking
    once the exit is heard."""
    clock = FakeClock()
    relay = MachineRelay(store, clock, LinkBoard())
    await relay.recovered.load()
    link = Link(relay.links)
    await relay.on_hello(MACHINE, [ATTEMPT])
    link.sent.clear()  # the hello's stop_worker: lost on its way

    async def heartbeat_after(ms: int) -> list[str]:
        clock.advance(ms)
        await relay.ask_again(MACHINE)
        return link.stops()

    reask_ms = int(REASK_S * 1000)
    assert await heartbeat_after(reask_ms - 1) == []  # not before the bound
    assert await heartbeat_after(1) == ["control_restarted"]
    assert await heartbeat_after(5_000) == ["control_restarted"]  # asked 5 s ago
    assert await heartbeat_after(reask_ms) == ["control_restarted"] * 2
    await relay.on_frame(MACHINE, WorkerFrame("worker", ATTEMPT, "exited", returncode=-15))
    assert await heartbeat_after(3 * reask_ms) == ["control_restarted"] * 2  # none left
    assert (await _end(store))[1] == "control_restarted: stopped by the Execution Node"
