"""A real SQLite file with Maia's migrations applied, for the synchronous webhook SQL tests."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from actors.webhook import WEBHOOK_ROWS, WebhookRecord, WebhookState, webhook_id_for
from storage import append_event
from storage._schema import migrate

ACTOR = "local-user"


@contextmanager
def open_db(path: Path) -> Iterator[sqlite3.Connection]:
    conn = sqlite3.connect(path / "maia.db", isolation_level=None)
    try:
        migrate(conn, path / "maia.db")
        yield conn
    finally:
        conn.close()


def add(
    conn: sqlite3.Connection,
    command: str = "c1",
    *,
    types: tuple[str, ...] = ("turn.completed",),
    project_id: str | None = None,
    now_ms: int = 1000,
) -> str:
    """Insert an active webhook row (in its own transaction) and return its ID."""
    webhook_id = webhook_id_for(ACTOR, command)
    record = WebhookRecord(webhook_id, "http://127.0.0.1:9/in", types, project_id, None,
                           "HOOK_SECRET", None, WebhookState.ACTIVE, None, 1, 0, now_ms,
                           now_ms)  # fmt: skip
    conn.execute("BEGIN IMMEDIATE")
    WEBHOOK_ROWS.insert(conn, record, now_ms)
    conn.execute("COMMIT")
    return webhook_id


def event(conn: sqlite3.Connection, event_type: str, *, project_id: str | None = None,
          classification: str = "operator", owner_type: str = "session") -> str:  # fmt: skip
    """Append one journal event in its own transaction; returns its ID."""
    conn.execute("BEGIN IMMEDIATE")
    record = append_event(
        conn, owner_id="session_1", event_type=event_type, payload={"n": 1}, now_ms=2000,
        owner_type=owner_type, project_id=project_id, session_id="session_1",
        classification=classification,  # type: ignore[arg-type]
    )  # fmt: skip
    conn.execute("COMMIT")
    return record.event_id
