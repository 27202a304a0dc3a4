"""Leaner journal rows (issue 21 goal 4): `session_id`, `schema_version`, `causation_id`
and `correlation_id` are generated columns, read and filtered as before; an event of its own
Session, at the current version, caused and correlated by its command, stores none of them;
and a database made by the previous schema upgrades with every event's columns unchanged."""

from __future__ import annotations

import functools
import sqlite3
from pathlib import Path

import storage
from maia.core import FakeClock
from storage._schema import _PAGES_LEAN_EVENT_ROWS, migrate

from ._fixtures import schema_before


def _append(conn: sqlite3.Connection, *, owner: str, session: str | None) -> object:
    cause = "cmd_1" if session == owner else "event_x"  # the command's own, or another's
    return storage.append_event(conn, owner_id=owner, event_type="test.happened", payload={},
                                now_ms=5, owner_type=owner.split("_")[0], session_id=session,
                                command_id="cmd_1", causation_id=cause,
                                correlation_id="cmd_1")  # fmt: skip


_STORED = (
    "SELECT session_stored, schema_stored, causation_stored, correlation_stored FROM events"
    " ORDER BY position"
)


async def test_an_event_stores_its_owner_session_and_version_in_no_bytes(tmp_path: Path) -> None:
    """A Session's own event stores '' for both and reads back its session and version; an
    event naming another Session (or none) stores that; reads and filters by session_id see
    the generated values."""
    async with storage.open_storage(tmp_path / "m.db", clock=FakeClock()) as store:
        for owner, session in (("session_a", "session_a"), ("webhook_w", "session_b"),
                               ("webhook_w", None)):  # fmt: skip
            await store.write(functools.partial(_append, owner=owner, session=session))
        stored = await store.read(lambda c: c.execute(_STORED).fetchall())
        assert stored == [("", "", "", ""), ("session_b", "", "event_x", ""),
                          (None, "", "event_x", "")]  # fmt: skip
        page = await store.read(lambda c: storage.read_events(c))
        read = [(e.session_id, e.schema_version, e.causation_id, e.correlation_id)
                for e in page.events]  # fmt: skip
        assert read == [
            ("session_a", "maia.event.v1", "cmd_1", "cmd_1"),
            ("session_b", "maia.event.v1", "event_x", "cmd_1"),
            (None, "maia.event.v1", "event_x", "cmd_1"),
        ]
        found = await store.read(
            lambda c: c.execute("SELECT owner_id FROM events WHERE session_id = 'session_a'")
            .fetchall()
        )  # fmt: skip
        assert found == [("session_a",)]


def test_the_migration_keeps_every_events_columns(tmp_path: Path) -> None:
    """Upgrading a journal of the previous schema (an event of its own Session, one naming
    another, one with no session; versions current, older and absent) reads every column
    as before, and stores '' only where the value is the owner's ID or the current version."""
    path = tmp_path / "old.db"
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        schema_before(conn, _PAGES_LEAN_EVENT_ROWS)
        rows = (("session_a", "session_a", "maia.event.v1", "cmd_1", "cmd_1"),
                ("webhook_w", "session_b", None, "event_x", None),
                ("webhook_w", None, "maia.event.v0", None, "cmd_2"))  # fmt: skip
        for position, (owner, session, version, cause, command) in enumerate(rows, 1):
            conn.execute("INSERT OR IGNORE INTO event_owners (owner_id) VALUES (?)", (owner,))
            number = conn.execute(
                "SELECT owner_no FROM event_owners WHERE owner_id = ?", (owner,)
            ).fetchone()[0]
            conn.execute(
                "INSERT INTO events (position, event_id, event_type, owner_type, owner_id,"
                " owner_seq, project_id, session_id, classification, occurred_ms, payload,"
                " schema_version, owner_no, causation_id, correlation_id, command_id) VALUES"
                " (?, ?, 'test.happened', ?, ?, ?, 'project_p', ?, 'operator', 7, '{}', ?, ?,"
                " ?, 'cmd_1', ?)",
                (position, storage.positioned_id("event", position), owner.split("_")[0],
                 owner, position, session, version, number, cause, command),
            )  # fmt: skip
        columns = f"SELECT {storage.EVENT_COLUMNS}, owner_no FROM events ORDER BY position"
        before = conn.execute(columns).fetchall()
        migrate(conn, path)
        assert conn.execute(columns).fetchall() == before
        assert conn.execute(_STORED).fetchall() == [
            ("", "", "", ""),
            ("session_b", None, "event_x", "cmd_1"),
            (None, "maia.event.v0", None, "cmd_1"),
        ]
        indexes = sorted(r[1] for r in conn.execute("PRAGMA index_list('events')"))
        assert indexes == ["events_by_legacy_id", "sqlite_autoindex_events_1"]
    finally:
        conn.close()
