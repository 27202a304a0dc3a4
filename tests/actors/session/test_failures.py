"""A send's refusal names the Session's real state and what to do next (issue 18 item 13),
read from a real, migrated SQLite database."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from actors.session._failures import closed_refusal, record_failure, worker_failure_reason
from actors.session._lifecycles import SessionState
from actors.session._store import Draft
from storage._schema import migrate


def _database(tmp_path: Path) -> sqlite3.Connection:
    path = tmp_path / "maia.db"
    conn = sqlite3.connect(path, isolation_level=None)
    migrate(conn, path)
    conn.execute("PRAGMA foreign_keys = OFF")
    conn.execute(
        "INSERT INTO sessions (session_id, project_id, executor, state, created_ms,"
        " updated_ms) VALUES ('session_a', 'project_a', 'builtin:echo', 'failed', 1, 1)"
    )
    return conn


def _draft(state: SessionState) -> Draft:
    return Draft("session_a", "project_a", state, 1, "stopped", {}, 1)


@pytest.mark.parametrize(
    ("state", "archived", "said"),
    [
        (SessionState.FAILED, 0, "the Session failed (start failed: cwd gone)"),
        (SessionState.STOPPED, 0, "the Session is stopped"),
        (SessionState.STOPPING, 0, "the Session is stopping"),
        (SessionState.STOPPED, 1, "the Session is archived"),
    ],
)
def test_the_refusal_names_the_state_and_the_next_step(
    tmp_path: Path, state: SessionState, archived: int, said: str
) -> None:
    """failed (with its kept reason), stopped, stopping and archived each say so, and all
    say to create a new Session; the details carry the same state."""
    conn = _database(tmp_path)
    draft = _draft(state)
    record_failure(conn, draft, "start failed: cwd gone")
    conn.execute("UPDATE sessions SET archived = ?", (archived,))
    error = closed_refusal(conn, draft)
    assert error.code == "invalid_state"
    assert error.message.startswith(said), error.message
    assert "create a new Session" in error.message
    assert "stopping or stopped" not in error.message
    assert error.details["state"] == ("archived" if archived else state.value)


def test_a_cleared_failure_is_gone(tmp_path: Path) -> None:
    """`record_failure(None)` clears the kept reason (a worker came up again)."""
    conn = _database(tmp_path)
    draft = _draft(SessionState.IDLE)
    record_failure(conn, draft, "start failed: executor unknown")
    record_failure(conn, draft, None)
    assert conn.execute("SELECT failure_message FROM sessions").fetchone() == (None,)


def test_a_worker_names_only_its_own_failure_codes() -> None:
    """launch_failed is taken from a worker; a Node's own reason or junk is turn_failed."""
    assert worker_failure_reason({"code": "launch_failed"}) == "launch_failed"
    for data in (None, {}, {"code": "runtime_lost"}, {"code": "worker_failed"}, {"code": 3}):
        assert worker_failure_reason(data) == "turn_failed"
