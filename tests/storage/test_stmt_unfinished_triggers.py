"""The unfinished-turn triggers without IN lists (migration
`_STMT_UNFINISHED_TRIGGERS_WITHOUT_IN_LISTS`): a database of the schema before, with rows,
keeps its values and then moves `sessions.unfinished_from` as before."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from storage._schema import _STMT_UNFINISHED_TRIGGERS_WITHOUT_IN_LISTS, migrate

from ._fixtures import schema_before
from .test_pages_unfinished_on_session import (
    _SESSIONS,
    _add_sessions,
    _expected_from,
    _insert_turn,
    _stored_from,
)


def test_the_triggers_without_in_lists_keep_the_value_moving(tmp_path: Path) -> None:
    """Upgraded with unfinished and finished turns, the values stay; then each insert and
    state move sets `unfinished_from` to the lowest unfinished turn (NULL after the last),
    and no trigger of `turns` tests the states with an IN list."""
    path = tmp_path / "old.db"
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        schema_before(conn, _STMT_UNFINISHED_TRIGGERS_WITHOUT_IN_LISTS)
        _add_sessions(conn)
        for seq, state in enumerate(("completed", "running", "queued", "queued"), 1):
            _insert_turn(conn, "session_a", seq, state)
        _insert_turn(conn, "session_b", 1, "failed")
        assert [_stored_from(conn, s) for s in _SESSIONS] == [2, None, None]
        migrate(conn, path)
        hot = dict(conn.execute(
            "SELECT name, sql FROM sqlite_schema WHERE type = 'trigger' AND name IN"
            " ('turns_unfinished_insert', 'turns_unfinished_state')"
        ).fetchall())  # fmt: skip
        assert len(hot) == 2
        assert all(" IN (" not in sql for sql in hot.values())
        assert [_stored_from(conn, s) for s in _SESSIONS] == [2, None, None]
        moves = [("turn_session_a_2", "completed", 3), ("turn_session_a_4", "failed", 3),
                 ("turn_session_a_3", "dispatching", 3), ("turn_session_a_3", "interrupted",
                 None), ("turn_session_a_1", "queued", 1), ("turn_session_a_1", "running", 1),
                 ("turn_session_a_1", "completed", None)]  # fmt: skip
        for turn_id, state, expected in moves:
            conn.execute("UPDATE turns SET state = ? WHERE turn_id = ?", (state, turn_id))
            assert _stored_from(conn, "session_a") == expected == _expected_from(conn, "session_a")
        _insert_turn(conn, "session_c", 2, "queued")
        _insert_turn(conn, "session_c", 1, "dispatching")
        _insert_turn(conn, "session_c", 3, "completed")
        assert _stored_from(conn, "session_c") == 1 == _expected_from(conn, "session_c")
        conn.execute("UPDATE turns SET state = 'queued' WHERE turn_id = 'turn_session_b_1'")
        assert _stored_from(conn, "session_b") == 1
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    finally:
        conn.close()
