"""`sessions.unfinished_from` in place of the index `turns_unfinished` (issue 21 goal 4,
migration `_PAGES_UNFINISHED_ON_SESSION`): the triggers keep it the lowest send order of the
Session's unfinished turns whatever writes the turns, the readers built on it find exactly the
unfinished turns, their plans search `UNIQUE (session_id, seq)`, and the migrations fill it
for a database with turns in it and keep it moving (`_PAGES_UNFINISHED_ONE_TRIGGER`)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

import storage
from actors.session._sql_recovery import (
    resumable_sessions,
    sessions_with_queued_turns,
    turns_to_recover,
)
from actors.session._sql_turns import (
    PENDING_TURN_STATES,
    UNFINISHED_TURNS,
    UNFINISHED_TURNS_OF_SESSIONS,
    session_and_pending_turns,
)
from maia.core import FakeClock
from storage._schema import _PAGES_UNFINISHED_ON_SESSION, _PAGES_UNFINISHED_ONE_TRIGGER, migrate

from ._fixtures import migrated_in_memory, schema_before
from ._unfinished_turns import (
    SEEDED_MOVES,
    SESSIONS,
    add_sessions,
    assert_moves_follow,
    expected_from,
    insert_turn,
    seeded_before,
    stored_from,
)

_STATES = ("queued", "dispatching", "running", "completed", "failed", "interrupted")


def _unfinished(conn: sqlite3.Connection) -> list[tuple[str, str]]:
    return conn.execute(
        f"SELECT turn_id, state FROM turns WHERE {UNFINISHED_TURNS} ORDER BY turn_id"
    ).fetchall()


_ops = st.lists(
    st.one_of(
        st.tuples(st.just("send"), st.sampled_from(SESSIONS), st.sampled_from(_STATES)),
        st.tuples(st.just("move"), st.integers(0, 40), st.sampled_from(_STATES)),
        st.tuples(st.just("delete"), st.integers(0, 40), st.just("")),
    ),
    max_size=40,
)


@given(_ops)
def test_unfinished_from_is_the_lowest_unfinished_turn_after_any_writes(
    ops: list[tuple[str, object, str]],
) -> None:
    """After any sends, state moves (finished and back) and deletions across three Sessions,
    each Session's `unfinished_from` is the lowest send order of its unfinished turns (NULL
    with none), and the readers built on it find exactly the unfinished turns."""
    conn = migrated_in_memory()
    add_sessions(conn)
    next_seq = dict.fromkeys(SESSIONS, 1)
    for kind, target, state in ops:
        turns = [r[0] for r in conn.execute("SELECT turn_id FROM turns ORDER BY rowid")]
        if kind == "send":
            assert isinstance(target, str)
            insert_turn(conn, target, next_seq[target], state)
            next_seq[target] += 1
        elif turns and kind == "move":
            assert isinstance(target, int)
            chosen = turns[target % len(turns)]
            conn.execute("UPDATE turns SET state = ? WHERE turn_id = ?", (state, chosen))
        elif turns and kind == "delete":
            assert isinstance(target, int)
            conn.execute("DELETE FROM turns WHERE turn_id = ?", (turns[target % len(turns)],))
        for session_id in SESSIONS:
            assert stored_from(conn, session_id) == expected_from(conn, session_id)
    expected = _unfinished(conn)
    found = conn.execute(
        f"SELECT t.turn_id, t.state FROM {UNFINISHED_TURNS_OF_SESSIONS}"
        f" WHERE t.state IN ({', '.join('?' * len(PENDING_TURN_STATES))}) ORDER BY t.turn_id",
        PENDING_TURN_STATES,
    ).fetchall()
    assert found == expected
    pending = sorted(t[0] for s in SESSIONS for t in session_and_pending_turns(conn, s)[1])
    assert pending == [turn_id for turn_id, _ in expected]
    conn.close()


def test_readers_of_unfinished_turns_search_the_send_order_index() -> None:
    """A Session's pending turns search `UNIQUE (session_id, seq)` from `unfinished_from`;
    across Sessions the plan scans `sessions` and searches each one's turns the same way."""
    conn = migrated_in_memory()
    try:
        indexes = {r[0] for r in conn.execute("SELECT name FROM sqlite_schema WHERE type='index'")}
        assert "turns_unfinished" not in indexes
        per_session = " | ".join(r[3] for r in conn.execute(
            "EXPLAIN QUERY PLAN SELECT turn_id FROM turns WHERE session_id = ? AND seq >= ?"
            f" AND {UNFINISHED_TURNS} ORDER BY seq", ("s", 1),
        ))  # fmt: skip
        assert per_session == (
            "SEARCH turns USING INDEX sqlite_autoindex_turns_2 (session_id=? AND seq>?)"
        )
        across = [r[3] for r in conn.execute(
            f"EXPLAIN QUERY PLAN SELECT count(*) FROM {UNFINISHED_TURNS_OF_SESSIONS}"
            " WHERE t.state = 'queued'"
        )]  # fmt: skip
        assert across[0].startswith("SCAN s")
        assert across[1] == (
            "SEARCH t USING INDEX sqlite_autoindex_turns_2 (session_id=? AND seq>?)"
        )
    finally:
        conn.close()


async def test_the_migration_fills_unfinished_from_for_stored_turns(tmp_path: Path) -> None:
    """A database from before the migration, with finished and unfinished turns, gets each
    Session's lowest unfinished turn; recovery's reads find the same turns as before, and a
    turn finishing afterwards moves it on."""
    path = tmp_path / "old.db"
    conn = sqlite3.connect(path, isolation_level=None)
    schema_before(conn, _PAGES_UNFINISHED_ON_SESSION)
    add_sessions(conn, ("running", "stopped", "idle"))
    stored = {
        "session_a": ("completed", "running", "failed", "queued"),
        "session_b": ("queued",),
        "session_c": ("completed", "interrupted"),
    }
    for session_id, states in stored.items():
        for seq, state in enumerate(states, 1):
            insert_turn(conn, session_id, seq, state)
    before = _unfinished(conn)
    conn.close()
    async with storage.open_storage(path, clock=FakeClock()):
        pass
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        assert [stored_from(conn, s) for s in SESSIONS] == [2, 1, None]
        assert conn.execute("SELECT count(*) FROM turns").fetchone()[0] == 7
        assert _unfinished(conn) == before
        recovered = turns_to_recover(conn, ("dispatching", "running"))
        assert [r[0] for r in recovered] == ["turn_session_a_2"]
        assert sessions_with_queued_turns(conn) == {"session_a", "session_b"}
        assert resumable_sessions(conn) == ("session_a",)
        conn.execute("UPDATE turns SET state = 'completed' WHERE turn_id = 'turn_session_a_2'")
        assert stored_from(conn, "session_a") == 4
        row, pending = session_and_pending_turns(conn, "session_a")
        assert row[:2] == ("project_p", "running")
        assert [t[0] for t in pending] == ["turn_session_a_4"]
    finally:
        conn.close()


def test_one_state_trigger_replaces_the_two_and_keeps_the_value_moving(tmp_path: Path) -> None:
    """A database from before `_PAGES_UNFINISHED_ONE_TRIGGER`, with unfinished and finished
    turns, keeps its values; afterwards one trigger moves it as a turn leaves the unfinished
    states (to the next unfinished one, NULL after the last) or comes back into them."""
    path = tmp_path / "old.db"
    with seeded_before(path, _PAGES_UNFINISHED_ONE_TRIGGER) as conn:
        migrate(conn, path)
        triggers = {r[0] for r in conn.execute(
            "SELECT name FROM sqlite_schema WHERE type = 'trigger' AND tbl_name = 'turns'"
        )}  # fmt: skip
        assert triggers == {
            "turns_unfinished_insert",
            "turns_unfinished_state",
            "turns_unfinished_delete",
            "turns_unfinished_move",
        }
        assert [stored_from(conn, s) for s in SESSIONS] == [2, None, None]
        assert_moves_follow(conn, "session_a", SEEDED_MOVES)
        conn.execute("UPDATE turns SET state = 'queued' WHERE turn_id = 'turn_session_b_1'")
        assert stored_from(conn, "session_b") == 1
