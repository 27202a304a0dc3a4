"""The unfinished-turn triggers without IN lists (migration
`_STMT_UNFINISHED_TRIGGERS_WITHOUT_IN_LISTS`): a database of the schema before, with rows,
keeps its values and then moves `sessions.unfinished_from` as before."""

from __future__ import annotations

from pathlib import Path

from storage._schema import _STMT_UNFINISHED_TRIGGERS_WITHOUT_IN_LISTS, migrate

from ._unfinished_turns import (
    SEEDED_MOVES,
    SESSIONS,
    assert_moves_follow,
    expected_from,
    insert_turn,
    seeded_before,
    stored_from,
)


def test_the_triggers_without_in_lists_keep_the_value_moving(tmp_path: Path) -> None:
    """Upgraded with unfinished and finished turns, the values stay; then each insert and
    state move sets `unfinished_from` to the lowest unfinished turn (NULL after the last),
    and no trigger of `turns` tests the states with an IN list."""
    path = tmp_path / "old.db"
    with seeded_before(path, _STMT_UNFINISHED_TRIGGERS_WITHOUT_IN_LISTS) as conn:
        migrate(conn, path)
        hot = dict(conn.execute(
            "SELECT name, sql FROM sqlite_schema WHERE type = 'trigger' AND name IN"
            " ('turns_unfinished_insert', 'turns_unfinished_state')"
        ).fetchall())  # fmt: skip
        assert len(hot) == 2
        assert all(" IN (" not in sql for sql in hot.values())
        assert [stored_from(conn, s) for s in SESSIONS] == [2, None, None]
        moves = (*SEEDED_MOVES, ("turn_session_a_1", "running", 1),
                 ("turn_session_a_1", "completed", None))  # fmt: skip
        assert_moves_follow(conn, "session_a", moves)
        insert_turn(conn, "session_c", 2, "queued")
        insert_turn(conn, "session_c", 1, "dispatching")
        insert_turn(conn, "session_c", 3, "completed")
        assert stored_from(conn, "session_c") == 1 == expected_from(conn, "session_c")
        conn.execute("UPDATE turns SET state = 'queued' WHERE turn_id = 'turn_session_b_1'")
        assert stored_from(conn, "session_b") == 1
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
