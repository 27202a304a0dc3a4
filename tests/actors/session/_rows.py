"""Rows the Session store tests write their turns under: a project `project_t` and a
running Session `session_t` (builtin:echo), a turn sent and dispatched there, the
turn UPDATEs a write runs and a turn's row as stored."""

from __future__ import annotations

import itertools
import sqlite3
from collections.abc import Callable
from typing import Any

from actors._write import Tx
from actors.session._lifecycles import SessionState, TurnEvent
from actors.session._store import Draft, flush_columns, insert_turn, turn_step


def seed_running_session(conn: sqlite3.Connection) -> None:
    """The project and the running, working Session `session_t` at revision 1."""
    conn.execute(
        "INSERT INTO projects (project_id, project_key, root, revision, created_ms, updated_ms)"
        " VALUES ('project_t', 'tests', '/tmp', 1, 0, 0)"
    )
    conn.execute(
        "INSERT INTO sessions (session_id, project_id, executor, cwd, state, activity,"
        " created_ms, updated_ms, revision) VALUES ('session_t', 'project_t', 'builtin:echo',"
        " '/tmp', 'running', 'working', 0, 0, 1)"
    )


def dispatched(
    conn: sqlite3.Connection, turn_id: str, now: int, then: int, *, flush: bool = False
) -> Draft:
    """Send and dispatch `turn_id` in one write at `now` (its columns flushed if `flush`);
    the draft of the next write (at `then`)."""
    draft = Draft("session_t", "project_t", SessionState.RUNNING, 1, "working", {}, now)
    draft.bind(Tx(conn, "session", "session_t", now, 0, 1))  # its send order: read
    insert_turn(conn, draft, turn_id, "the prompt")
    turn_step(conn, draft, turn_id, TurnEvent.DISPATCH)
    if flush:
        flush_columns(conn, draft)
    return draft.copy(then).bind(Tx(conn, "session", "session_t", then, 0, 1))


def turn_updates(conn: sqlite3.Connection, run: Callable[[], object]) -> list[str]:
    """The `UPDATE turns` statements `run()` executes on `conn`, in order."""
    statements: list[str] = []
    conn.set_trace_callback(statements.append)
    try:
        run()
    finally:
        conn.set_trace_callback(None)
    # a trigger's program is traced again with its statement's text: one statement a run
    return [s for s, _ in itertools.groupby(statements) if s.startswith("UPDATE turns")]


def turn_row(conn: sqlite3.Connection, turn_id: str) -> tuple[Any, ...]:
    """The turn's (state, revision, started_ms, finished_ms, failure_reason) as stored."""
    row: tuple[Any, ...] = conn.execute(
        "SELECT state, revision, started_ms, finished_ms, failure_reason FROM turns"
        " WHERE turn_id = ?",
        (turn_id,),
    ).fetchone()
    return row
