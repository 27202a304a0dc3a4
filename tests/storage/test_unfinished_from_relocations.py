"""`sessions.unfinished_from` (migration `_PAGES_UNFINISHED_ON_SESSION` and
`_PAGES_UNFINISHED_ONE_TRIGGER`) under the writes the first property test leaves out: a turn
sent out of send order, a turn moved to another Session or place, a state move and a move in
one statement, and one statement updating many turns at once; on a real SQLite file with
foreign keys enforced, as the store opens it."""

from __future__ import annotations

import sqlite3
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from actors.session._sql_turns import UNFINISHED_TURNS
from storage._schema import migrate

_SESSIONS = ("session_a", "session_b", "session_c")
_STATES = ("queued", "dispatching", "running", "completed", "failed", "interrupted")

_op = st.one_of(
    st.tuples(
        st.just("send"), st.sampled_from(_SESSIONS), st.integers(1, 30), st.sampled_from(_STATES)
    ),
    st.tuples(st.just("state"), st.integers(0, 60), st.just(""), st.sampled_from(_STATES)),
    st.tuples(
        st.just("relocate"), st.integers(0, 60), st.sampled_from(_SESSIONS), st.integers(1, 30)
    ),
    st.tuples(
        st.just("relocate_and_state"),
        st.integers(0, 60),
        st.sampled_from(_SESSIONS),
        st.sampled_from(_STATES),
    ),
    st.tuples(
        st.just("session_all"),
        st.integers(0, 2),
        st.sampled_from(_STATES),
        st.sampled_from(_STATES),
    ),
    st.tuples(st.just("delete"), st.integers(0, 60), st.just(""), st.just("")),
)


def _open(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")  # as the tests' stores: no fsync per statement
    conn.execute("PRAGMA foreign_keys = ON")
    migrate(conn, path)
    conn.execute(
        "INSERT INTO projects (project_id, project_key, root, revision, created_ms, updated_ms)"
        " VALUES ('project_p', 'p', '/tmp/p', 1, 0, 0)"
    )
    for session_id in _SESSIONS:
        conn.execute(
            "INSERT INTO sessions (session_id, project_id, executor, state, created_ms,"
            " updated_ms) VALUES (?, 'project_p', 'echo', 'idle', 1, 1)",
            (session_id,),
        )
    return conn


def _check(conn: sqlite3.Connection) -> None:
    for session_id in _SESSIONS:
        stored = conn.execute(
            "SELECT unfinished_from FROM sessions WHERE session_id = ?", (session_id,)
        ).fetchone()[0]
        expected = conn.execute(
            f"SELECT min(seq) FROM turns WHERE session_id = ? AND {UNFINISHED_TURNS}",
            (session_id,),
        ).fetchone()[0]
        assert stored == expected, session_id


def _apply(conn: sqlite3.Connection, op: tuple[str, object, object, object]) -> None:
    kind, a, b, c = op
    turns = [r[0] for r in conn.execute("SELECT turn_id FROM turns ORDER BY turn_no")]
    try:
        if kind == "send":
            conn.execute(
                "INSERT INTO turns (turn_id, session_id, seq, state, text, created_ms)"
                " VALUES (?, ?, ?, ?, '', 1)",
                (f"turn_{len(turns)}_{a}_{b}", a, b, c),
            )
        elif not turns:
            return
        elif kind == "state":
            conn.execute("UPDATE turns SET state = ? WHERE turn_id = ?",
                         (c, turns[int(str(a)) % len(turns)]))  # fmt: skip
        elif kind == "relocate":
            conn.execute("UPDATE turns SET session_id = ?, seq = ? WHERE turn_id = ?",
                         (b, c, turns[int(str(a)) % len(turns)]))  # fmt: skip
        elif kind == "relocate_and_state":
            conn.execute("UPDATE turns SET session_id = ?, state = ? WHERE turn_id = ?",
                         (b, c, turns[int(str(a)) % len(turns)]))  # fmt: skip
        elif kind == "session_all":
            conn.execute("UPDATE turns SET state = ? WHERE session_id = ? AND state = ?",
                         (c, _SESSIONS[int(str(a))], b))  # fmt: skip
        elif kind == "delete":
            conn.execute("DELETE FROM turns WHERE turn_id = ?",
                         (turns[int(str(a)) % len(turns)],))  # fmt: skip
    except sqlite3.IntegrityError:  # a place taken (UNIQUE (session_id, seq)): no change
        pass


@settings(max_examples=60, deadline=None)
@given(st.lists(_op, max_size=30))
def test_unfinished_from_holds_under_relocations_and_many_row_updates(
    ops: list[tuple[str, object, object, object]],
) -> None:
    """After any sends (in or out of send order), state moves, relocations to another
    Session or place (with or without a state move in the same statement), one statement
    moving many turns, and deletions, each Session's `unfinished_from` is the lowest send
    order of its unfinished turns (NULL with none)."""
    with tempfile.TemporaryDirectory() as tmp:
        conn = _open(Path(tmp) / "maia.db")
        try:
            for op in ops:
                _apply(conn, op)
                _check(conn)
        finally:
            conn.close()
