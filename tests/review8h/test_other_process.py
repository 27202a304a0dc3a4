"""Another process changing the journal between the writer's transactions, and a writer
killed with SIGKILL (s8-cpu's journal heads: found safe).

Between transactions the heads are right for what was committed; another process pruning the
journal empty makes the next rowid 1, not the expected position, and another process's rows
make it higher, so the writer reads again. Heads live in the writer's memory: a writer killed
with SIGKILL and opened again starts with none.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import trio

import storage
from maia.core import FakeClock

_PRUNE_ALL_THEN = textwrap.dedent(
    """
    import sqlite3, sys
    import storage
    conn = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=10)
    conn.execute("BEGIN IMMEDIATE")
    newest = conn.execute("SELECT max(position) FROM events").fetchone()[0]
    storage.prune_events(conn, before_position=newest + 1)
    for owner in sys.argv[2:]:
        storage.append_event(conn, owner_id=owner, event_type="other.wrote", payload={},
                             now_ms=7)
    conn.execute("COMMIT")
    """
)

_KEEP_WRITING = textwrap.dedent(
    """
    import sqlite3, sys, trio
    import storage
    from maia.core import FakeClock
    async def main():
        async with storage.open_storage(__import__("pathlib").Path(sys.argv[1]),
                                        clock=FakeClock()) as store:
            n = 0
            while True:
                owner = ("session_a", "session_b", "session_c")[n % 3]
                await store.write(lambda conn: storage.append_event(
                    conn, owner_id=owner, event_type="t", payload={}, now_ms=1))
                n += 1
                print(n, flush=True)
    trio.run(main)
    """
)


def _append(conn: sqlite3.Connection, owner: str) -> tuple[int, int]:
    event = storage.append_event(
        conn, owner_id=owner, event_type="test.happened", payload={}, now_ms=5
    )
    return event.position, event.owner_sequence


def _events(path: Path) -> list[tuple[int, str, int]]:
    with sqlite3.connect(path) as conn:
        return list(conn.execute("SELECT position, owner_id, owner_seq FROM events ORDER BY 1"))


def _prune_all_then(path: Path, *others: str) -> None:
    """Another process prunes the journal empty, then appends for `others`."""
    subprocess.run([sys.executable, "-c", _PRUNE_ALL_THEN, str(path), *others],
                   check=True, timeout=60, capture_output=True)  # fmt: skip


async def test_another_process_prunes_empty_between_transactions(tmp_path: Path) -> None:
    """After another process pruned the journal empty (and, the second time, appended), the
    writer's kept owner continues at the oldest retained position (or after the other's rows)
    with its sequence running on."""
    path = tmp_path / "p.db"
    with trio.fail_after(120):
        async with storage.open_storage(path, clock=FakeClock()) as store:
            for _ in range(3):
                await store.write(lambda conn: _append(conn, "session_a"))
            for others in ((), ("session_x",)):
                await trio.to_thread.run_sync(_prune_all_then, path, *others)
                await store.write(lambda conn: _append(conn, "session_a"))
    assert _events(path) == [(5, "session_x", 1), (6, "session_a", 5)]
    with sqlite3.connect(path) as conn:
        (oldest,) = conn.execute(
            "SELECT value FROM storage_meta WHERE key = 'oldest_retained_position'"
        ).fetchone()
    assert int(oldest) == 5


def _kill_a_writer_after(path: Path, commits: int) -> None:
    """A writer process appending for three owners, SIGKILLed after `commits` commits."""
    # A new session, so the kill reaches only the writer this test started.
    command = [sys.executable, "-c", _KEEP_WRITING, str(path)]
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, text=True, start_new_session=True
    ) as child:
        try:
            assert child.stdout is not None
            for line in child.stdout:
                if int(line) >= commits:
                    break
            os.kill(child.pid, signal.SIGKILL)
        finally:
            child.kill()
            child.wait(30)


async def test_a_writer_killed_and_opened_again(tmp_path: Path) -> None:
    """A writer process appending for three owners, SIGKILLed after at least 30 commits, then
    opened again and appended to: positions 1..n with no hole, each owner's sequence 1..k."""
    path = tmp_path / "k.db"
    with trio.fail_after(120):
        await trio.to_thread.run_sync(lambda: _kill_a_writer_after(path, 30))
        async with storage.open_storage(path, clock=FakeClock()) as store:
            await store.write(lambda conn: _append(conn, "session_a"))
            await store.write(lambda conn: _append(conn, "session_b"))
            await store.write(lambda conn: _append(conn, "session_a"))
    events = _events(path)
    assert [p for p, _, _ in events] == list(range(1, len(events) + 1))
    for owner in ("session_a", "session_b", "session_c"):
        sequences = [s for _, o, s in events if o == owner]
        assert sequences == list(range(1, len(sequences) + 1))
    assert len(events) >= 33
