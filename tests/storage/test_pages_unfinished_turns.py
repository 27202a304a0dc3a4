"""The partial index `turns_unfinished` (issue 21 goal 4), as its migration left the schema
(`_PAGES_UNFINISHED_ON_SESSION` later replaced it: test_pages_unfinished_on_session.py): it
held exactly the unfinished turns, and recovery never asks for a state outside them."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from actors.session._lifecycles import TURN_TABLE
from actors.session._sql_turns import PENDING_TURN_STATES, UNFINISHED_TURNS
from storage._schema import _PAGES_UNFINISHED_TURNS

from ._fixtures import schema_before, schema_through


def test_the_inline_states_are_the_pending_states_and_cover_recovery() -> None:
    """`UNFINISHED_TURNS` names the pending states in order, and every state recovery reads
    is one of them (a recovered state outside the index would be missed)."""
    listed = ", ".join(f"'{state}'" for state in PENDING_TURN_STATES)
    assert f"state IN ({listed})" == UNFINISHED_TURNS
    assert {s.value for s in TURN_TABLE.recovery_states} <= set(PENDING_TURN_STATES)


def test_the_index_holds_only_unfinished_turns(tmp_path: Path) -> None:
    """A finished turn leaves the index; an unfinished one is found through it."""
    conn = sqlite3.connect(tmp_path / "m.db", isolation_level=None)
    try:
        schema_through(conn, _PAGES_UNFINISHED_TURNS)
        index_sql = conn.execute(
            "SELECT sql FROM sqlite_schema WHERE name = 'turns_unfinished'"
        ).fetchone()[0]
        assert index_sql.endswith(f"WHERE {UNFINISHED_TURNS}")
        conn.execute("PRAGMA foreign_keys = OFF")
        for seq, state in enumerate(("completed", "queued", "failed", "running"), 1):
            conn.execute(
                "INSERT INTO turns (turn_id, session_id, seq, state, text, created_ms)"
                " VALUES (?, 'session_a', ?, ?, '', 1)",
                (f"turn_{seq}", seq, state),
            )
        entries = conn.execute(
            "SELECT state FROM turns INDEXED BY turns_unfinished"
            f" WHERE {UNFINISHED_TURNS} ORDER BY state"
        ).fetchall()
        assert entries == [("queued",), ("running",)]
    finally:
        conn.close()


def test_the_migration_indexes_the_unfinished_turns_already_stored(tmp_path: Path) -> None:
    """A database from before the migration keeps its turns; afterwards `turns_by_state` is
    gone and `turns_unfinished` holds exactly the stored unfinished ones."""
    path = tmp_path / "old.db"
    conn = sqlite3.connect(path, isolation_level=None)
    schema_before(conn, _PAGES_UNFINISHED_TURNS)
    for seq, state in enumerate(("completed", "dispatching", "interrupted", "queued"), 1):
        conn.execute(
            "INSERT INTO turns (turn_id, session_id, seq, state, text, created_ms)"
            " VALUES (?, 'session_old', ?, ?, '', 1)",
            (f"turn_{seq}", seq, state),
        )
    schema_through(conn, _PAGES_UNFINISHED_TURNS)
    try:
        names = {r[0] for r in conn.execute("SELECT name FROM sqlite_schema WHERE type='index'")}
        assert "turns_by_state" not in names
        indexed = conn.execute(
            f"SELECT turn_id FROM turns INDEXED BY turns_unfinished WHERE {UNFINISHED_TURNS}"
            " ORDER BY turn_id"
        ).fetchall()
        assert indexed == [("turn_2",), ("turn_4",)]
        assert conn.execute("SELECT count(*) FROM turns").fetchone()[0] == 4
    finally:
        conn.close()
