"""Shared builders for storage tests: a project and Session rows, a representative mutation."""

from __future__ import annotations

import functools
import sqlite3
from pathlib import Path

import storage
from maia.core import new_id

PROJECT_ID = "project_00000000000000000000000000000001"


def seed_project(conn: sqlite3.Connection) -> None:
    """Insert the test project (once)."""
    if conn.execute("SELECT 1 FROM projects WHERE project_id = ?", (PROJECT_ID,)).fetchone():
        return
    storage.insert_project(
        conn,
        storage.ProjectRow(PROJECT_ID, "demo", "/tmp/demo", "Demo", 1, 0, 0),
    )


def session_row(session_id: str | None = None, *, title: str = "t") -> storage.SessionRow:
    return storage.SessionRow(
        session_id=session_id or new_id("session"),
        project_id=PROJECT_ID,
        executor="echo",
        title=title,
        labels={"team": "core"},
        cwd="/tmp/demo",
        state="idle",
        activity="stopped",
        revision=1,
        created_ms=0,
        updated_ms=0,
        archived=False,
        archived_ms=None,
        archive_summary=None,
        transcript_path=None,
        latest_turn_id=None,
    )


def create_session_apply(row: storage.SessionRow, now_ms: int) -> storage.WriteFn[storage.Applied]:
    """The body of a session.create-like mutation: row + event, reported for the receipt."""

    def apply(conn: sqlite3.Connection) -> storage.Applied:
        storage.insert_session(conn, row)
        event = storage.append_event(
            conn,
            owner_id=row.session_id,
            event_type="session.created",
            payload={"title": row.title},
            now_ms=now_ms,
            aggregate_revision=1,
            project_id=row.project_id,
            session_id=row.session_id,
        )
        return storage.Applied(
            result={"sessionId": row.session_id, "revision": 1},
            targets=(storage.ReceiptTarget("session", row.session_id, "created", None, 1),),
            event_ids=(event.event_id,),
            project_id=row.project_id,
        )

    return apply


def count(conn: sqlite3.Connection, table: str) -> int:
    return int(conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0])


def schema_before(conn: sqlite3.Connection, migration: str) -> None:
    """Migrate `conn` (autocommit) as the Maia before `migration` left its database: every
    earlier migration, each in its own transaction with its user_version, as the store does."""
    from storage._schema import MIGRATIONS, _statements

    for number, script in enumerate(MIGRATIONS[: MIGRATIONS.index(migration)], 1):
        conn.execute("BEGIN")
        for statement in _statements(script):
            conn.execute(statement)
        conn.execute(f"PRAGMA user_version = {number}")
        conn.execute("COMMIT")


def schema_through(conn: sqlite3.Connection, migration: str) -> None:
    """Migrate `conn` (autocommit) on from its user_version through `migration` (included):
    a database as the Maia of that migration left it, before any later one."""
    from storage._schema import MIGRATIONS, _statements

    current = int(conn.execute("PRAGMA user_version").fetchone()[0])
    for number in range(current + 1, MIGRATIONS.index(migration) + 2):
        conn.execute("BEGIN")
        for statement in _statements(MIGRATIONS[number - 1]):
            conn.execute(statement)
        conn.execute(f"PRAGMA user_version = {number}")
        conn.execute("COMMIT")


@functools.cache
def _migrated_image() -> bytes:
    """An in-memory database at the current schema, migrated once per process, as bytes."""
    from storage._schema import migrate

    conn = sqlite3.connect(":memory:", isolation_level=None)
    try:
        migrate(conn, Path(":memory:"))
        return conn.serialize()
    finally:
        conn.close()


def migrated_in_memory() -> sqlite3.Connection:
    """A new autocommit in-memory database at the current schema, no rows: a copy of one
    migrated once (the migrations cost ~55 ms; a Hypothesis test wants one per example)."""
    conn = sqlite3.connect(":memory:", isolation_level=None)
    conn.deserialize(_migrated_image())
    return conn
