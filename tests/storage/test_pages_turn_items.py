"""`turn_items` without an index of item IDs (issue 21 goal 4): items are found by their turn
and place, an update checks the ID on the row, and a database made by the previous schema
upgrades with its items intact (the index check as that migration left the schema; the keys
that replaced `(turn_id, seq)` later: test_pages_turn_item_keys.py)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from actors.session import insert_item, truncate_item, update_item
from storage._schema import _PAGES_TURN_ITEMS_BY_TURN, migrate

from ._fixtures import schema_before, schema_through

_ITEM_COLUMNS = "rowid, item_id, turn_id, seq, kind, text, state, data, truncated, artifact"


def _database_of_the_previous_schema(path: Path) -> sqlite3.Connection:
    """A database as the schema before this migration left it, with a Session, a turn and
    two items of it (one with data), at rowids 3 and 7."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA foreign_keys = ON")
    schema_before(conn, _PAGES_TURN_ITEMS_BY_TURN)
    conn.execute(
        "INSERT INTO projects (project_id, project_key, root, created_ms, updated_ms)"
        " VALUES ('project_p', 'p', '/tmp/p', 1, 1)"
    )
    conn.execute(
        "INSERT INTO sessions (session_id, project_id, executor, state, created_ms, updated_ms)"
        " VALUES ('session_s', 'project_p', 'echo', 'idle', 1, 1)"
    )
    conn.execute(
        "INSERT INTO turns (turn_id, session_id, seq, state, text, created_ms)"
        " VALUES ('turn_t', 'session_s', 1, 'running', 'hi', 1)"
    )
    for rowid, seq, data in ((3, 1, None), (7, 2, '{"k":1}')):
        conn.execute(
            "INSERT INTO turn_items (rowid, item_id, turn_id, seq, kind, text, state,"
            " created_ms, updated_ms, data) VALUES (?, ?, 'turn_t', ?, 'message', 'so far',"
            " 'started', 1, 1, ?)",
            (rowid, f"item_{seq}", seq, data),
        )
    return conn


def _items(conn: sqlite3.Connection) -> list[tuple[object, ...]]:
    return conn.execute(f"SELECT {_ITEM_COLUMNS} FROM turn_items ORDER BY rowid").fetchall()


def test_the_migration_keeps_items_and_drops_the_index_of_item_ids(tmp_path: Path) -> None:
    """Upgrading keeps every item with its rowid and columns and the foreign key to its turn;
    the only index left on `turn_items` is `(turn_id, seq)`."""
    conn = _database_of_the_previous_schema(tmp_path / "old.db")
    try:
        before = _items(conn)
        schema_through(conn, _PAGES_TURN_ITEMS_BY_TURN)
        assert _items(conn) == before
        indexes = [r[1] for r in conn.execute("PRAGMA index_list('turn_items')")]
        assert indexes == ["sqlite_autoindex_turn_items_1"]
        keys = [r[2] for r in conn.execute("PRAGMA index_info('sqlite_autoindex_turn_items_1')")]
        assert keys == ["turn_id", "seq"]
        assert [r[2] for r in conn.execute("PRAGMA foreign_key_list('turn_items')")] == ["turns"]
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
    finally:
        conn.close()


def test_an_item_is_updated_by_its_turn_and_place_with_its_id_checked(tmp_path: Path) -> None:
    """`update_item` and `truncate_item` change the row at (turn, seq) whose ID matches, by
    its key (the plan searches it), and nothing when the ID is another item's; a second
    item at the same place is refused; `insert_item` still refuses an unknown turn."""
    conn = _database_of_the_previous_schema(tmp_path / "old.db")
    try:
        migrate(conn, tmp_path / "old.db")
        update_item(conn, "item_1", "turn_t", 1, "all of it", "completed", 9)
        truncate_item(conn, "item_2", "turn_t", 2, "artifact_a")
        update_item(conn, "item_other", "turn_t", 2, "wrong", "completed", 9)
        rows = conn.execute("SELECT item_id, text, state, truncated, artifact FROM turn_items"
                            " ORDER BY seq").fetchall()  # fmt: skip
        assert rows == [
            ("item_1", "all of it", "completed", 0, None),
            ("item_2", "so far", "started", 1, "artifact_a"),
        ]
        plan = " ".join(
            r[3]
            for r in conn.execute(
                "EXPLAIN QUERY PLAN UPDATE turn_items SET text = 'x' WHERE item_key ="
                " (SELECT (turn_no << 24) + 1 FROM turns WHERE turn_id = 'turn_t')"
                " AND item_id = 'item_1'"
            )
        )
        assert "SEARCH turn_items USING INTEGER PRIMARY KEY (rowid=?)" in plan
        with pytest.raises(sqlite3.IntegrityError):
            insert_item(conn, "item_3", "turn_t", 1, "message", "dup", "started", 9)
        with pytest.raises(sqlite3.IntegrityError):
            insert_item(conn, "item_4", "turn_missing", 1, "message", "x", "started", 9)
    finally:
        conn.close()
