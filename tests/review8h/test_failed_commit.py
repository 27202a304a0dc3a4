"""A failed COMMIT leaves the writer's journal heads forgotten (s8-cpu's heads: found safe).

The COMMIT is made to fail for real: a request defers the foreign-key check to the COMMIT
(`PRAGMA defer_foreign_keys`) and writes a Session of no Project, so SQLite refuses the
COMMIT with the transaction still open; the writer rolls it back and answers `unavailable`.
The heads the batch's appends noted must not outlive it (`run_transaction` forgets them on any
sqlite3.Error; the next append's rowid check would catch them too).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
import trio

import storage
from maia.core import FakeClock, MaiaError


def _append(conn: sqlite3.Connection, owner: str) -> int:
    event = storage.append_event(
        conn, owner_id=owner, event_type="test.happened", payload={}, now_ms=5
    )
    return event.owner_sequence


def _refused_at_commit(conn: sqlite3.Connection) -> int:
    """Append for session_a, then a row whose foreign key only the COMMIT checks."""
    sequence = _append(conn, "session_a")
    _append(conn, "session_b")
    conn.execute("PRAGMA defer_foreign_keys = ON")
    conn.execute(
        "INSERT INTO sessions (session_id, project_id, executor, state, created_ms,"
        " updated_ms) VALUES ('session_orphan', 'project_none', 'exec', 'idle', 1, 1)"
    )
    return sequence


async def test_a_failed_commit_forgets_the_heads(tmp_path: Path) -> None:
    """After a COMMIT SQLite refused (nothing of the batch stored), the next events of the
    owners the batch appended for take the positions and sequences after the committed ones."""
    path = tmp_path / "c.db"
    with trio.fail_after(60):
        async with storage.open_storage(path, clock=FakeClock()) as store:
            assert await store.write(lambda conn: _append(conn, "session_a")) == 1
            with pytest.raises(MaiaError) as refused:
                await store.write(_refused_at_commit)
            assert refused.value.code == "unavailable"
            assert store.statistics().failed_commits == 1
            assert await store.write(lambda conn: _append(conn, "session_b")) == 1
            assert await store.write(lambda conn: _append(conn, "session_a")) == 2
    with sqlite3.connect(path) as conn:
        rows = conn.execute("SELECT position, owner_id, owner_seq FROM events ORDER BY 1")
        assert list(rows) == [(1, "session_a", 1), (2, "session_b", 1), (3, "session_a", 2)]
