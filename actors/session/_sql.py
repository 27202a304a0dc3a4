"""The Session kind's `sessions` rows for the one write path (`actors._write`): the row as
created (`SESSION_ROWS`, the creation row of `session.create`) and as its lifecycle moves it
(`SESSION_LIFE_ROWS`: state and revision, compare-and-set), the journal they write to
(every event is owned by the Session, so its history has one gap-free sequence) and their
events' bodies; the columns outside the lifecycle (activity, title, archive, failure,
conversation). The `turns` and `turn_items` rows are `_sql_turns`'s, a Node start's reads
and sweep `_sql_recovery`'s.
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


@attrs.frozen
class SessionLife:
    """The lifecycle of a Session's row: what its transitions move."""

    id: str
    project_id: str
    state: SessionState
    revision: int
    # Columns outside the lifecycle written in the same UPDATE (the announced activity, the
    # latest turn): one statement for what the transaction changes on the row.
    activity: str | None = None
    latest_turn_id: str | None = None


class SessionLifeRows:
    """The `sessions` row as its lifecycle moves it (created by `SESSION_ROWS`)."""

    resource = "session"

    def insert(self, conn: sqlite3.Connection, record: SessionLife, now_ms: int) -> None:
        raise TypeError("a Session's row is created by SESSION_ROWS (session.create)")

    def update(self, conn: sqlite3.Connection, before: SessionLife, after: SessionLife,
               now_ms: int) -> bool:  # fmt: skip
        sets, args = (
            "state = ?, revision = ?, updated_ms = ?",
            [after.state.value, after.revision, now_ms],
        )
        if after.activity is not None:
            sets, args = sets + ", activity = ?", [*args, after.activity]
        if after.latest_turn_id is not None:
            sets, args = sets + ", latest_turn_id = ?", [*args, after.latest_turn_id]
        return conn.execute(
            f"UPDATE sessions SET {sets} WHERE session_id = ? AND revision = ?",
            (*args, after.id, before.revision),
        ).rowcount == 1  # fmt: skip

    def owner(self, record: SessionLife) -> EventOwner:
        return EventOwner(record.id, "session", record.project_id, record.id)

    def payload(self, row: Transition[Any, Any], after: SessionLife) -> dict[str, Any]:
        return {"state": row.target.value, "from": row.state.value}


SESSION_LIFE_ROWS = SessionLifeRows()


def set_activity_column(conn: sqlite3.Connection, session_id: str, activity: str) -> None:
    """The announced activity (no revision: it is not lifecycle state)."""
    conn.execute("UPDATE sessions SET activity = ? WHERE session_id = ?", (activity, session_id))


def set_latest_turn(conn: sqlite3.Connection, session_id: str, turn_id: str) -> None:
    """The Session's newest turn (session views read its state)."""
    conn.execute("UPDATE sessions SET latest_turn_id = ? WHERE session_id = ?",
                 (turn_id, session_id))  # fmt: skip


def set_columns(conn: sqlite3.Connection, session_id: str, sets: str,
                values: tuple[Any, ...]) -> None:  # fmt: skip
    """Columns outside the lifecycle a touched revision changes (a title, the archive)."""
    conn.execute(f"UPDATE sessions SET {sets} WHERE session_id = ?", (*values, session_id))


# -- what the actor reads, and the columns outside the lifecycle ----------------------------


def launch_row(conn: sqlite3.Connection, session_id: str) -> Any:
    """`(executor, cwd, conversation_id)`: what a worker launch needs."""
    return conn.execute(
        "SELECT executor, cwd, conversation_id FROM sessions WHERE session_id = ?", (session_id,)
    ).fetchone()


def archive_and_failure(conn: sqlite3.Connection, session_id: str) -> tuple[bool, str | None]:
    """Whether the Session is archived, and its kept failure message."""
    row = conn.execute(
        "SELECT archived, failure_message FROM sessions WHERE session_id = ?", (session_id,)
    ).fetchone()
    return (bool(row[0]), row[1]) if row is not None else (False, None)


def set_failure_message(conn: sqlite3.Connection, session_id: str, text: str | None) -> None:
    conn.execute(
        "UPDATE sessions SET failure_message = ? WHERE session_id = ? AND failure_message IS NOT ?",
        (text, session_id, text),
    )


def set_conversation(conn: sqlite3.Connection, session_id: str, conversation_id: str) -> bool:
    """Keep the harness's conversation id; False when it is the one already kept."""
    return conn.execute(
        "UPDATE sessions SET conversation_id = ? WHERE session_id = ? AND conversation_id IS NOT ?",
        (conversation_id, session_id, conversation_id),
    ).rowcount > 0  # fmt: skip
