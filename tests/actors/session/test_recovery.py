"""Restart recovery on a real database, and the sweep of a dead Node's leftover workers."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import psutil
import trio

from actors.session import kill_leftovers, recover_sessions, turn_view
from actors.session._launch import Leftover
from actors.session._lifecycles import SESSION_TABLE, SessionState
from maia.config import parse_user_config
from maia.protocol import SystemClock, Turn
from storage import open_storage
from tests.actors.session._open import open_session_runtime

SLEEPER = [sys.executable, "-c", "import time; time.sleep(60)"]


SCOPE = "/home/a/maia.db"


def _spawn(marker: str, scope: str = SCOPE) -> subprocess.Popen[bytes]:
    """A sleeper carrying `marker` and `scope`, returned once it has exec'd (before that,
    /proc shows the parent's environment, and the sweep rightly leaves it alone)."""
    env = {**os.environ, "MAIA_WORKER_ATTEMPT": marker, "MAIA_WORKER_SCOPE": scope}
    process = subprocess.Popen(SLEEPER, env=env, start_new_session=True)
    for _ in range(1000):  # at most ~10 s
        try:
            if psutil.Process(process.pid).environ().get("MAIA_WORKER_ATTEMPT") == marker:
                return process
        except psutil.Error:
            pass
        time.sleep(0.01)
    process.kill()
    raise AssertionError("the sleeper never showed its marker")


def test_leftovers_are_killed_only_when_the_marker_matches() -> None:
    """A process carrying the attempt's marker and this home's scope is killed with its
    group; a process at a recorded pid with another marker (a reused pid), or with the
    attempt's marker under another home's scope (the original of a restored backup), is
    left alone."""
    ours = _spawn("attempt_ours")
    stranger = _spawn("attempt_other")
    original = _spawn("attempt_copied", scope="/home/b/maia.db")
    try:
        leftovers = [
            Leftover("attempt_ours", ours.pid, 0),
            Leftover("attempt_ours_too", stranger.pid, 0),
            Leftover("attempt_copied", original.pid, 0),
        ]
        killed = kill_leftovers(leftovers, SCOPE)
        assert killed == [ours.pid]
        assert ours.wait(timeout=10) == -9
        for alive in (stranger, original):
            assert psutil.pid_exists(alive.pid)
            assert alive.poll() is None
    finally:
        for process in (ours, stranger, original):
            process.kill()
            process.wait()


def _seed(conn: sqlite3.Connection, root: str) -> None:
    conn.execute(
        "INSERT INTO projects (project_id, project_key, root, revision, created_ms, updated_ms)"
        " VALUES ('project_r', 'rec', ?, 1, 0, 0)",
        (root,),
    )
    sessions = [
        ("session_busy", "running"),
        ("session_lone", "running"),
        ("session_stopping", "stopping"),
        ("session_idle", "idle"),
        ("session_warm", "idle"),
    ]
    conn.executemany(
        "INSERT INTO sessions (session_id, project_id, executor, cwd, state, created_ms,"
        " updated_ms) VALUES (?, 'project_r', 'builtin:echo', ?, ?, 0, 0)",
        [(s, root, state) for s, state in sessions],
    )
    # idle between turns with its worker warm (no activation held its lease)
    conn.execute("UPDATE sessions SET activity = 'idle' WHERE session_id = 'session_warm'")
    conn.executemany(
        "INSERT INTO turns (turn_id, session_id, seq, state, text, created_ms)"
        " VALUES (?, ?, ?, ?, 'x', 0)",
        [
            ("turn_run", "session_busy", 1, "running"),
            ("turn_q1", "session_busy", 2, "queued"),
            ("turn_q2", "session_busy", 3, "queued"),
            ("turn_lone", "session_lone", 1, "dispatching"),
        ],
    )
    conn.execute(
        "INSERT INTO worker_attempts (attempt_id, session_id, epoch, node_epoch, state, pid,"
        " started_ms) VALUES ('attempt_old', 'session_busy', 1, 0, 'running', 4194000, 0)"
    )
    conn.executemany(  # the old Node's durable timers of the Sessions, and another kind's
        "INSERT INTO actor_timers (kind, actor_id, name, due_wall_ms, due_monotonic_ms,"
        " node_epoch) VALUES (?, ?, ?, 5000, 5000, 0)",
        [("session", "session_busy", "wall-time"),
         ("session", "session_lone", "idle-release"), ("routine", "routine_x", "tick")],
    )  # fmt: skip


async def test_recovery_rows(tmp_path: Path) -> None:
    """Running and dispatching turns fail runtime_lost; Sessions with queued turns stay
    recovering for a new attempt, the others go idle (or stopped); an idle Session whose
    worker was warm stays idle with activity stopped; attempts are closed; the Sessions'
    durable timers are dropped (another kind's stay)."""
    async with open_storage(tmp_path / "maia.db", clock=SystemClock()) as store:
        await store.write(lambda c: _seed(c, str(tmp_path)))
        report = await recover_sessions(store, 1_000)

        def read(
            conn: sqlite3.Connection,
        ) -> tuple[dict[str, str], dict[str, tuple[str, str | None]]]:
            sessions = dict(conn.execute("SELECT session_id, state FROM sessions").fetchall())
            turns = {
                row[0]: (row[1], row[2])
                for row in conn.execute("SELECT turn_id, state, failure_reason FROM turns")
            }
            return sessions, turns

        sessions, turns = await store.read(read)
        activities = await store.read(
            lambda c: dict(c.execute("SELECT session_id, activity FROM sessions").fetchall())
        )
        ended = await store.read(
            lambda c: c.execute("SELECT end_reason FROM worker_attempts").fetchone()[0]
        )
        timers = await store.read(
            lambda c: c.execute("SELECT kind, actor_id, name FROM actor_timers").fetchall()
        )
    assert report.resumable == ("session_busy",)
    # The Sessions' timers bound a worker that died with the old Node: dropped, not fired.
    assert sorted(report.timers_dropped) == [("session_busy", "wall-time"),
                                             ("session_lone", "idle-release")]  # fmt: skip
    assert timers == [("routine", "routine_x", "tick")]
    assert report.turns_lost == 2
    assert sessions == {
        "session_busy": "recovering",
        "session_lone": "idle",
        "session_stopping": "stopped",
        "session_idle": "idle",
        "session_warm": "idle",
    }
    assert activities["session_warm"] == "stopped"
    assert turns["turn_run"] == ("failed", "runtime_lost")
    assert turns["turn_lone"] == ("failed", "runtime_lost")
    assert turns["turn_q1"] == ("queued", None)
    assert ended == "node_restarted"


async def test_recovery_follows_the_tables_recovery_column(tmp_path: Path) -> None:
    """A Session left in each state of the table's recovery column (each with a queued turn)
    lands in that column's target; a Session in a state without one is untouched."""
    targets = SESSION_TABLE.recovery_targets
    untouched = [s for s in SessionState if s not in targets]
    left = {f"session_{n}": state for n, state in enumerate([*targets, *untouched])}

    def seed(conn: sqlite3.Connection) -> None:
        conn.execute(
            "INSERT INTO projects (project_id, project_key, root, revision, created_ms,"
            " updated_ms) VALUES ('project_r', 'rec', ?, 1, 0, 0)",
            (str(tmp_path),),
        )
        for n, (session_id, state) in enumerate(left.items()):
            conn.execute(
                "INSERT INTO sessions (session_id, project_id, executor, cwd, state, created_ms,"
                " updated_ms) VALUES (?, 'project_r', 'builtin:echo', ?, ?, 0, 0)",
                (session_id, str(tmp_path), state.value),
            )
            conn.execute(
                "INSERT INTO turns (turn_id, session_id, seq, state, text, created_ms)"
                " VALUES (?, ?, 1, 'queued', 'x', 0)",
                (f"turn_{n}", session_id),
            )

    async with open_storage(tmp_path / "maia.db", clock=SystemClock()) as store:
        await store.write(seed)
        await recover_sessions(store, 1_000)
        after = await store.read(
            lambda c: dict(c.execute("SELECT session_id, state FROM sessions").fetchall())
        )
    assert untouched  # idle and the terminal states have no recovery path
    assert {s: SessionState(after[s]) for s in left} == {
        s: targets.get(state, state) for s, state in left.items()
    }


async def test_resumed_sessions_share_scarce_slots(tmp_path: Path) -> None:
    """Two Sessions recover with queued turns but one worker slot: the second waits, gets
    the slot once the first's worker is idle, and every queued turn completes."""
    config = parse_user_config({"swarm": {"capacity": {"maxLiveSessions": 1}}})

    def seed(conn: sqlite3.Connection) -> None:
        conn.execute(
            "INSERT INTO projects (project_id, project_key, root, revision, created_ms,"
            " updated_ms) VALUES ('project_r', 'rec', ?, 1, 0, 0)",
            (str(tmp_path),),
        )
        for name in ("one", "two"):
            conn.execute(
                "INSERT INTO sessions (session_id, project_id, executor, cwd, state, created_ms,"
                " updated_ms) VALUES (?, 'project_r', 'builtin:echo', ?, 'running', 0, 0)",
                (f"session_{name}", str(tmp_path)),
            )
            conn.executemany(
                "INSERT INTO turns (turn_id, session_id, seq, state, text, created_ms)"
                " VALUES (?, ?, ?, 'queued', ?, 0)",
                [(f"turn_{name}_{n}", f"session_{name}", n, f"{name} {n}") for n in (1, 2)],
            )

    async with open_storage(tmp_path / "maia.db", clock=SystemClock()) as store:
        await store.write(seed)

        async def turn(turn_id: str) -> Turn:
            return await store.read(lambda c: turn_view(c, turn_id))

        async with open_session_runtime(store, clock=SystemClock(), config=config) as runtime:
            with trio.fail_after(30):
                for turn_id in ("turn_one_2", "turn_two_2"):
                    while (await turn(turn_id)).state != "completed":
                        await runtime.notifier.wait(turn_id, 0.2)
            texts = [(await turn(t)).output_text for t in ("turn_two_1", "turn_two_2")]
    assert texts == ["two 1", "two 2"]
