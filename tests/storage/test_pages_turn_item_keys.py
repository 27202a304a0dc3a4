"""`turn_items` keyed by its turn and place (issue 21 goal 4, migration
`_PAGES_TURN_ITEMS_ON_TURN_KEY`): `item_key = turn_no << 24 | seq` with no index beside the
table, a turn's items read as its key range, a trigger that puts any writer's row at its key
(`_PAGES_TURN_ITEM_KEY_FROM_ANY_WRITER`) or refuses it, and a database made by the previous
schema (foreign keys enforced, as the store opens it) upgrading with its turns, items and
triggers intact."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

import storage
from actors.session import insert_item, update_item
from actors.session._sql_turns import ITEMS_OF_TURN
from maia.core import FakeClock
from storage._schema import (
    _PAGES_TURN_ITEM_KEY_FROM_ANY_WRITER,
    _PAGES_TURN_ITEMS_ON_TURN_KEY,
    migrate,
)

from ._fixtures import schema_before

_TURNS = "turn_id, session_id, seq, state, revision, text, created_ms, usage, send_receipt"
_ITEMS = "item_id, turn_id, seq, kind, text, state, created_ms, updated_ms, data, truncated"


def _old_database(path: Path) -> sqlite3.Connection:
    """The schema before the migration with a Session, two turns at rowids 4 and 9 (one
    unfinished), their items, an item whose turn is gone and an approval of a turn."""
    conn = sqlite3.connect(path, isolation_level=None)
    schema_before(conn, _PAGES_TURN_ITEMS_ON_TURN_KEY)
    conn.execute(
        "INSERT INTO sessions (session_id, project_id, executor, state, created_ms, updated_ms)"
        " VALUES ('session_s', 'project_p', 'echo', 'running', 1, 1)"
    )
    for rowid, turn_id, seq, state in ((4, "turn_a", 1, "completed"), (9, "turn_b", 2, "running")):
        conn.execute(
            "INSERT INTO turns (rowid, turn_id, session_id, seq, state, text, created_ms, usage,"
            " send_receipt) VALUES (?, ?, 'session_s', ?, ?, 'hi', 1, '{}', 7)",
            (rowid, turn_id, seq, state),
        )
    for turn_id, seq, data in (("turn_b", 2, None), ("turn_a", 1, '{"k":1}'), ("turn_b", 1, None),
                               ("turn_gone", 1, None)):  # fmt: skip
        conn.execute(
            f"INSERT INTO turn_items ({_ITEMS}) VALUES (?, ?, ?, 'message', 'text', 'started',"
            " 1, 2, ?, 0)",
            (f"item_{turn_id}_{seq}", turn_id, seq, data),
        )
    conn.execute(
        "INSERT INTO approvals (approval_id, session_id, turn_id, call_id, kind, summary,"
        " options, can_remember, state, revision, created_ms) VALUES ('approval_x',"
        " 'session_s', 'turn_b', 'c', 'k', 's', '[]', 0, 'pending', 1, 1)"
    )
    conn.execute("PRAGMA foreign_keys = ON")
    return conn


def test_the_migration_keys_items_by_their_turn_and_keeps_everything(tmp_path: Path) -> None:
    """Turns keep their rows with `turn_no` the rowid they had; each item gets its turn's key
    (the orphan a negative one), columns unchanged, no index on `turn_items`; foreign keys are
    enforced again after, and the unfinished-turn triggers still run on the rebuilt table."""
    conn = _old_database(tmp_path / "old.db")
    try:
        turns = conn.execute(f"SELECT rowid, {_TURNS} FROM turns ORDER BY rowid").fetchall()
        items = conn.execute(f"SELECT {_ITEMS} FROM turn_items ORDER BY item_id").fetchall()
        migrate(conn, tmp_path / "old.db")
        assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
        after = conn.execute(f"SELECT turn_no, {_TURNS} FROM turns ORDER BY turn_no").fetchall()
        assert after == turns
        assert conn.execute(f"SELECT {_ITEMS} FROM turn_items ORDER BY item_id").fetchall() == items
        keys = dict(conn.execute("SELECT item_id, item_key FROM turn_items").fetchall())
        assert keys == {
            "item_turn_a_1": (4 << 24) + 1,
            "item_turn_b_1": (9 << 24) + 1,
            "item_turn_b_2": (9 << 24) + 2,
            "item_turn_gone_1": -4,
        }
        assert conn.execute("PRAGMA index_list('turn_items')").fetchall() == []
        assert conn.execute("PRAGMA foreign_key_check('approvals')").fetchall() == []
        assert [r[0] for r in conn.execute("PRAGMA foreign_key_check('turn_items')")] == [
            "turn_items"
        ]  # the orphan only, as before
        conn.execute("UPDATE turns SET state = 'completed' WHERE turn_id = 'turn_b'")
        assert conn.execute("SELECT unfinished_from FROM sessions").fetchone()[0] is None
    finally:
        conn.close()


async def test_items_are_their_turns_key_range_and_other_keys_are_refused(tmp_path: Path) -> None:
    """`insert_item` (and storage's `insert_turn_item`) key an item by its turn; a turn's items
    read back as its key range in order (storage's reader too), an update finds its row; a
    writer that leaves the key to SQLite gets its row moved to its key; a place out of range,
    a taken place and an unknown turn are refused, by any writer."""
    async with storage.open_storage(tmp_path / "m.db", clock=FakeClock()):
        pass
    conn = sqlite3.connect(tmp_path / "m.db", isolation_level=None)
    try:
        conn.execute(
            "INSERT INTO sessions (session_id, project_id, executor, state, created_ms,"
            " updated_ms) VALUES ('session_s', 'project_p', 'echo', 'idle', 1, 1)"
        )
        for turn_id, seq in (("turn_a", 1), ("turn_b", 2)):
            conn.execute(
                "INSERT INTO turns (turn_id, session_id, seq, state, text, created_ms)"
                " VALUES (?, 'session_s', ?, 'running', 'hi', 1)",
                (turn_id, seq),
            )
        for turn_id, seq in (("turn_b", 2), ("turn_a", 1), ("turn_b", 1), ("turn_a", 2)):
            insert_item(conn, f"{turn_id}_{seq}", turn_id, seq, "message", "t", "started", 5)
        update_item(conn, "turn_b_2", "turn_b", 2, "done", "completed", 6)
        listed = conn.execute(
            f"SELECT item_id, text FROM turn_items WHERE {ITEMS_OF_TURN} ORDER BY item_key",
            ("turn_b", "turn_b"),
        ).fetchall()
        assert listed == [("turn_b_1", "t"), ("turn_b_2", "done")]
        storage.insert_turn_item(
            conn, storage.TurnItemRow("turn_a_3", "turn_a", 3, "message", "t", "started", 5, 5)
        )
        listed_a = [i.item_id for i in storage.list_turn_items(conn, "turn_a")]
        assert listed_a == ["turn_a_1", "turn_a_2", "turn_a_3"]
        with pytest.raises(sqlite3.IntegrityError):
            insert_item(conn, "again", "turn_a", 1, "message", "t", "started", 5)
        with pytest.raises(sqlite3.IntegrityError):
            insert_item(conn, "lost", "turn_missing", 1, "message", "t", "started", 5)
        with pytest.raises(sqlite3.IntegrityError):
            insert_item(conn, "far", "turn_a", 1 << 24, "message", "t", "started", 5)
        # A writer that leaves the key to SQLite: its row moves to its key in the statement.
        raw = f"INSERT INTO turn_items ({_ITEMS}) VALUES (?, ?, ?, 'message', 't', 'started',"
        raw += " 1, 1, NULL, 0)"
        conn.execute(raw, ("plain", "turn_a", 4))
        assert conn.execute(
            "SELECT item_key FROM turn_items WHERE item_id = 'plain'"
        ).fetchone()[0] == (1 << 24) + 4  # fmt: skip
        refused = (("taken", "turn_a", 3), ("lost", "turn_missing", 1),
                   ("far", "turn_b", 1 << 24), ("below", "turn_b", -1))  # fmt: skip
        for item_id, turn_id, seq in refused:
            with pytest.raises(sqlite3.IntegrityError):
                conn.execute(raw, (item_id, turn_id, seq))
        with pytest.raises(sqlite3.IntegrityError, match="item_key"):
            conn.execute("UPDATE turn_items SET seq = 9 WHERE item_id = 'turn_a_2'")
        assert conn.execute("SELECT count(*) FROM turn_items").fetchone()[0] == 6
        assert [i.item_id for i in storage.list_turn_items(conn, "turn_a")][-1] == "plain"
    finally:
        conn.close()


def test_the_any_writer_migration_keeps_keyed_items_and_keys_a_raw_insert(tmp_path: Path) -> None:
    """A database from before `_PAGES_TURN_ITEM_KEY_FROM_ANY_WRITER` keeps its keyed items;
    afterwards an insert naming only the columns of old lands at its turn's key."""
    path = tmp_path / "old.db"
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        schema_before(conn, _PAGES_TURN_ITEM_KEY_FROM_ANY_WRITER)
        conn.execute(
            "INSERT INTO turns (turn_no, turn_id, session_id, seq, state, text, created_ms)"
            " VALUES (5, 'turn_a', 'session_s', 1, 'running', 'hi', 1)"
        )
        insert_item(conn, "item_1", "turn_a", 1, "message", "t", "started", 5)
        migrate(conn, path)
        conn.execute(
            f"INSERT INTO turn_items ({_ITEMS}) VALUES ('item_2', 'turn_a', 2, 'tool_call', '',"
            " 'completed', 0, 0, NULL, 0)"
        )
        keys = conn.execute("SELECT item_id, item_key FROM turn_items ORDER BY item_key")
        assert keys.fetchall() == [("item_1", (5 << 24) + 1), ("item_2", (5 << 24) + 2)]
    finally:
        conn.close()
