"""Node restart with many Sessions in storage: time to ready, and to the first dispatch.

The database is seeded as a Node killed mid-work leaves it: 10,000 Sessions, of which 143
were running a turn with 7 more queued behind it (1,001 queued turns), plus open worker
attempts whose processes are gone. Then a real Node starts on that home (in this process)
and we measure:
  * ready_s: from the start call until the API listens (recovery has run: running turns
    failed runtime_lost, Sessions recovering, leftovers swept);
  * first_dispatch_s: from the start call until the first queued turn is dispatching.
Idle Sessions are never loaded as actors: only the 143 with queued turns are resumed.
The raw primitive beside it: opening the same database and counting its rows.
"""

from __future__ import annotations

import sqlite3
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import trio

from bench._report import Report, log, parse_args
from maia.core import SystemClock
from maia.node import NodeConfig, NodeHome, serve_node
from storage import open_storage

SESSIONS = 10_000
BUSY = 143  # Sessions with a running turn and 7 queued
QUEUED_EACH = 7
DEAD_PID = 4_194_000  # above the default pid_max: never a live process


async def _seed(home: Path, root: Path, sessions: int, busy: int) -> None:
    async with open_storage(home / "maia.db", clock=SystemClock(), synchronous="OFF"):
        pass  # migrations and the node row
    conn = sqlite3.connect(home / "maia.db")
    now = int(time.time() * 1000)
    with conn:
        conn.execute(
            "INSERT INTO projects (project_id, project_key, root, revision, created_ms,"
            " updated_ms) VALUES ('project_bench', 'bench', ?, 1, ?, ?)",
            (str(root), now, now),
        )
        rows = []
        for number in range(sessions):
            state = "running" if number < busy else "idle"
            rows.append((f"session_{number:032x}", state, str(root), now, now))
        conn.executemany(
            "INSERT INTO sessions (session_id, project_id, executor, cwd, state, activity,"
            " created_ms, updated_ms) VALUES (?, 'project_bench', 'builtin:echo', ?, ?,"
            " 'working', ?, ?)",
            [(r[0], r[2], r[1], r[3], r[4]) for r in rows],
        )
        turns, attempts = [], []
        for number in range(busy):
            session_id = f"session_{number:032x}"
            for seq in range(1, QUEUED_EACH + 2):
                state = "running" if seq == 1 else "queued"
                turns.append((f"turn_{number:024x}{seq:08x}", session_id, seq, state, now))
            attempts.append((f"attempt_{number:032x}", session_id, number + 1, DEAD_PID, now))
        conn.executemany(
            "INSERT INTO turns (turn_id, session_id, seq, state, text, created_ms)"
            " VALUES (?, ?, ?, ?, 'hello', ?)",
            turns,
        )
        conn.executemany(
            "INSERT INTO worker_attempts (attempt_id, session_id, epoch, node_epoch, state,"
            " pid, started_ms) VALUES (?, ?, ?, 1, 'running', ?, ?)",
            attempts,
        )
        conn.execute("UPDATE counters SET value = ? WHERE name = 'worker_epoch'", (busy,))
    conn.close()


def _dispatched(path: Path) -> bool:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        row = conn.execute(
            "SELECT 1 FROM turns WHERE seq > 1 AND state != 'queued' LIMIT 1"
        ).fetchone()
        return row is not None
    finally:
        conn.close()


async def _wait_dispatched(path: Path) -> None:
    dispatched = False
    while not dispatched:
        dispatched = await trio.to_thread.run_sync(_dispatched, path)
        await trio.sleep(0.002)


def _raw_open(path: Path) -> float:
    started = time.perf_counter()
    conn = sqlite3.connect(path)
    conn.execute("SELECT count(*) FROM sessions").fetchone()
    # The second term names the partial index's WHERE, as the Node's status counts do.
    conn.execute(
        "SELECT count(*) FROM turns WHERE state = 'queued'"
        " AND state IN ('queued', 'dispatching', 'running')"
    ).fetchone()
    conn.close()
    return time.perf_counter() - started


async def _restart(home: Path) -> tuple[float, float]:
    started = time.perf_counter()
    async with trio.open_nursery() as nursery:
        await nursery.start(serve_node, NodeConfig(NodeHome(home)))
        ready = time.perf_counter() - started
        with trio.fail_after(60):
            await _wait_dispatched(home / "maia.db")
        first = time.perf_counter() - started
        nursery.cancel_scope.cancel()
    return ready, first


async def main(quick: bool) -> Report:
    report = Report("recovery")
    rounds = 1 if quick else 3
    readies, firsts, raws = [], [], []
    for round_number in range(rounds):
        with tempfile.TemporaryDirectory() as folder:
            home = Path(folder) / "home"
            home.mkdir(mode=0o700)
            root = Path(folder) / "project"
            root.mkdir()
            log(f"round {round_number + 1}: seeding {SESSIONS} Sessions")
            await _seed(home, root, SESSIONS, BUSY)
            raws.append(_raw_open(home / "maia.db"))
            ready, first = await _restart(home)
            readies.append(ready)
            firsts.append(first)
    readies.sort()
    firsts.sort()
    report.figures.update(
        sessions=SESSIONS,
        queued_turns=BUSY * QUEUED_EACH,
        ready_s=readies[len(readies) // 2],
        first_dispatch_s=firsts[len(firsts) // 2],
        raw_open_and_count_s=sorted(raws)[len(raws) // 2],
    )
    report.notes = (
        f"median of {rounds} restart(s); a real Node in this process on a seeded home; "
        f"{BUSY} Sessions had a running turn (failed runtime_lost) and {QUEUED_EACH} queued"
    )
    return report


if __name__ == "__main__":
    args = parse_args(__doc__ or "recovery")
    trio.run(main, args.quick).emit(args.json)
