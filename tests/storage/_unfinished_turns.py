"""Shared builders for the `sessions.unfinished_from` tests: Sessions and turns written as raw
rows, the value the triggers keep beside the one the turns say, and a database of the schema
before a migration seeded with finished and unfinished turns (one seeder for each upgrade)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from actors.session._sql_turns import UNFINISHED_TURNS

from ._fixtures import schema_before

SESSIONS = ("session_a", "session_b", "session_c")
# Moves of the seeded session_a's turns, each with the value after it: the lowest unfinished
# turn finishes, a later one fails, one moves within the unfinished states, the last
# unfinished one ends (NULL), and a finished one comes back.
SEEDED_MOVES = (
    ("turn_session_a_2", "completed", 3),
    ("turn_session_a_4", "failed", 3),
    ("turn_session_a_3", "dispatching", 3),
    ("turn_session_a_3", "interrupted", None),
    ("turn_session_a_1", "queued", 1),
)


def add_sessions(conn: sqlite3.Connection, states: tuple[str, ...] = ("idle",) * 3) -> None:
    """The three `SESSIONS` in project `project_p`, in `states`."""
    for session_id, state in zip(SESSIONS, states, strict=True):
        conn.execute(
            "INSERT INTO sessions (session_id, project_id, executor, state, created_ms,"
            " updated_ms) VALUES (?, 'project_p', 'echo', ?, 1, 1)",
            (session_id, state),
        )


def insert_turn(conn: sqlite3.Connection, session_id: str, seq: int, state: str) -> None:
    """Turn `turn_<session_id>_<seq>` in `state`, written as a raw row (the triggers run)."""
    conn.execute(
        "INSERT INTO turns (turn_id, session_id, seq, state, text, created_ms)"
        " VALUES (?, ?, ?, ?, '', 1)",
        (f"turn_{session_id}_{seq}", session_id, seq, state),
    )


def expected_from(conn: sqlite3.Connection, session_id: str) -> int | None:
    """The lowest send order of the Session's unfinished turns, as its turns say."""
    row = conn.execute(
        f"SELECT min(seq) FROM turns WHERE session_id = ? AND {UNFINISHED_TURNS}", (session_id,)
    ).fetchone()
    return None if row[0] is None else int(row[0])


def stored_from(conn: sqlite3.Connection, session_id: str) -> int | None:
    """The Session's `unfinished_from`, as the triggers kept it."""
    row = conn.execute(
        "SELECT unfinished_from FROM sessions WHERE session_id = ?", (session_id,)
    ).fetchone()
    return None if row[0] is None else int(row[0])


@contextmanager
def seeded_before(path: Path, migration: str) -> Iterator[sqlite3.Connection]:
    """An autocommit connection to a database at `path` as the Maia before `migration` left
    it, with the three Sessions idle: session_a's turns completed, running, queued, queued,
    session_b's one failed, session_c none (so `unfinished_from` is 2, NULL, NULL; checked).
    Closed on exit."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        schema_before(conn, migration)
        add_sessions(conn)
        for seq, state in enumerate(("completed", "running", "queued", "queued"), 1):
            insert_turn(conn, "session_a", seq, state)
        insert_turn(conn, "session_b", 1, "failed")
        assert [stored_from(conn, s) for s in SESSIONS] == [2, None, None]
        yield conn
    finally:
        conn.close()


def assert_moves_follow(
    conn: sqlite3.Connection, session_id: str, moves: Iterable[tuple[str, str, int | None]]
) -> None:
    """Each (turn ID, new state, expected value) in turn: after the raw state update the
    Session's stored `unfinished_from` is the expected value, and what its turns say."""
    for turn_id, state, expected in moves:
        conn.execute("UPDATE turns SET state = ? WHERE turn_id = ?", (state, turn_id))
        assert stored_from(conn, session_id) == expected == expected_from(conn, session_id)
