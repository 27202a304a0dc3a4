"""The Session kind's rows for the one write path: the `sessions` row as a record, its
insert and its compare-and-set update, the journal it writes to and its events' bodies.

`session.create` is the creation row of the Session table applied through this module
(`_create`); the Session's later transitions still go through `_store`'s in-transaction
steps, which write the same columns under the same revision guard.
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
