"""The Session kind's rows for the one write path: the `sessions` row as a record, its
insert and its compare-and-set update, the journal it writes to and its events' bodies.

`session.create` is the creation row of the Session table applied through this module
(`_create`); the Session's later transitions still go through `_store`'s in-transaction
steps, which write the same columns under the same revision guard. The reads and the
attempt sweep of a Node start (`_recovery`) live here too.
"""

from __future__ import annotations

import sqlite3
from typing import Any

import attrs

from actors._table import Transition
from actors._write import EventOwner

from ._lifecycles import SessionEvent, SessionState


@attrs.frozen
class SessionRecord:
    """A Session's row as its actor holds it."""

    id: str
    project_id: str
    executor: str
    cwd: str
    title: str | None = None
    labels: str = "{}"  # JSON object of label -> value
    state: SessionState = SessionState.IDLE
    revision: int = 0
    activity: str = "stopped"


class SessionRows:
    """The `sessions` table for the write path."""

    resource = "session"

    def insert(self, conn: sqlite3.Connection, record: SessionRecord, now_ms: int) -> None:
        conn.execute(
            "INSERT INTO sessions (session_id, project_id, executor, title, labels, cwd, state,"
            " activity, revision, created_ms, updated_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (record.id, record.project_id, record.executor, record.title, record.labels,
             record.cwd, record.state.value, record.activity, record.revision, now_ms, now_ms),
        )  # fmt: skip

    def update(self, conn: sqlite3.Connection, before: SessionRecord, after: SessionRecord,
               now_ms: int) -> bool:  # fmt: skip
        return conn.execute(
            "UPDATE sessions SET state = ?, revision = ?, title = ?, labels = ?, activity = ?,"
            " updated_ms = ? WHERE session_id = ? AND revision = ?",
            (after.state.value, after.revision, after.title, after.labels, after.activity,
             now_ms, after.id, before.revision),
        ).rowcount == 1  # fmt: skip

    def owner(self, record: SessionRecord) -> EventOwner:
        return EventOwner(record.id, "session", record.project_id, record.id)

    def payload(self, row: Transition[Any, Any], after: SessionRecord) -> dict[str, Any]:
        if row.event is SessionEvent.CREATE:
            return {"executor": after.executor, "title": after.title, "cwd": after.cwd}
        return {"state": row.target.value, "from": row.state.value}


SESSION_ROWS = SessionRows()


# What a Node start reads and closes (`_recovery`); the states come from the tables'
# recovery column, so this module holds the SQL and the tables hold the decision.


def _marks(values: tuple[str, ...]) -> str:
    return ", ".join("?" * len(values))


def sessions_to_recover(
    conn: sqlite3.Connection, states: tuple[str, ...], also: tuple[str, ...] = ()
) -> list[tuple[str, str, str, int, str]]:
    """`(session_id, project_id, state, revision, activity)` of every Session in `states`,
    and of the Sessions named in `also` (those with a turn to recover) that are not."""
    rows = conn.execute(
        "SELECT session_id, project_id, state, revision, activity FROM sessions"
        f" WHERE state IN ({_marks(states)})",
        states,
    ).fetchall()
    known = {row[0] for row in rows}
    extra = tuple(s for s in also if s not in known)
    if extra:
        rows += conn.execute(
            "SELECT session_id, project_id, state, revision, activity FROM sessions"
            f" WHERE session_id IN ({_marks(extra)})",
            extra,
        ).fetchall()
    return rows


def turns_to_recover(
    conn: sqlite3.Connection, states: tuple[str, ...]
) -> list[tuple[str, str, str, int, str]]:
    """`(turn_id, session_id, state, revision, text)` of every turn in `states`."""
    return conn.execute(
        "SELECT turn_id, session_id, state, revision, text FROM turns"
        f" WHERE state IN ({_marks(states)})",
        states,
    ).fetchall()


def sessions_with_queued_turns(conn: sqlite3.Connection) -> set[str]:
    return {
        row[0]
        for row in conn.execute("SELECT DISTINCT session_id FROM turns WHERE state = 'queued'")
    }


def close_open_attempts(conn: sqlite3.Connection, now_ms: int) -> None:
    """Every worker attempt the old Node left open ends `node_restarted`."""
    conn.execute(
        "UPDATE worker_attempts SET state = 'exited', ended_ms = ?, end_reason = 'node_restarted'"
        " WHERE ended_ms IS NULL",
        (now_ms,),
    )


def resumable_sessions(conn: sqlite3.Connection) -> tuple[str, ...]:
    """Sessions with queued turns that may still run them (not stopped or failed)."""
    rows = conn.execute(
        "SELECT DISTINCT t.session_id FROM turns t JOIN sessions s USING (session_id)"
        " WHERE t.state = 'queued' AND s.state NOT IN ('stopped', 'failed')"
    ).fetchall()
    return tuple(r[0] for r in rows)
