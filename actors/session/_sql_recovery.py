"""What a Node start reads and closes for the Session kind (`_recovery`); the states come
from the tables' recovery column, so this module holds the SQL and the tables the decision.
"""

from __future__ import annotations

import sqlite3

from ._sql_turns import UNFINISHED_TURNS_OF_SESSIONS, placeholders


def sessions_to_recover(
    conn: sqlite3.Connection, states: tuple[str, ...], also: tuple[str, ...] = ()
) -> list[tuple[str, str, str, int, str]]:
    """`(session_id, project_id, state, revision, activity)` of every Session in `states`,
    and of the Sessions named in `also` (those with a turn to recover) that are not."""
    rows = conn.execute(
        "SELECT session_id, project_id, state, revision, activity FROM sessions"
        f" WHERE state IN ({placeholders(states)})",
        states,
    ).fetchall()
    known = {row[0] for row in rows}
    extra = tuple(s for s in also if s not in known)
    if extra:
        rows += conn.execute(
            "SELECT session_id, project_id, state, revision, activity FROM sessions"
            f" WHERE session_id IN ({placeholders(extra)})",
            extra,
        ).fetchall()
    return rows


def turns_to_recover(
    conn: sqlite3.Connection, states: tuple[str, ...]
) -> list[tuple[str, str, str, int, str]]:
    """`(turn_id, session_id, state, revision, text)` of every turn in `states` (unfinished
    ones: only those are searched), in send order within each Session."""
    return conn.execute(
        "SELECT t.turn_id, t.session_id, t.state, t.revision, t.text"
        f" FROM {UNFINISHED_TURNS_OF_SESSIONS} WHERE t.state IN ({placeholders(states)})"
        " ORDER BY s.rowid, t.seq",
        states,
    ).fetchall()


def sessions_with_queued_turns(conn: sqlite3.Connection) -> set[str]:
    return {
        row[0]
        for row in conn.execute(
            f"SELECT DISTINCT s.session_id FROM {UNFINISHED_TURNS_OF_SESSIONS}"
            " WHERE t.state = 'queued'"
        )
    }


def idle_sessions_with_worker(conn: sqlite3.Connection) -> tuple[str, ...]:
    """Idle Sessions whose announced activity says a worker was warm or wanted."""
    rows = conn.execute(
        "SELECT session_id FROM sessions WHERE state = 'idle' AND activity <> 'stopped'"
    ).fetchall()
    return tuple(r[0] for r in rows)


# An attempt of a Session placed on a machine ran on that Execution Node, not here: the
# old Node's death did not end it (spec MN0 item 10).
_PLACED = "session_id IN (SELECT session_id FROM machine_placements)"


def close_open_attempts(conn: sqlite3.Connection, now_ms: int) -> None:
    """Every worker attempt the old Node left open here ends `node_restarted`; a placed
    one stays open until its Execution Node reports it gone (`actors.machine._recovered`)."""
    conn.execute(
        "UPDATE worker_attempts SET state = 'exited', ended_ms = ?, end_reason = 'node_restarted'"
        f" WHERE ended_ms IS NULL AND NOT {_PLACED}",
        (now_ms,),
    )


def placed_open_attempts(conn: sqlite3.Connection) -> set[str]:
    """The open attempts that ran on a machine (no local process to sweep)."""
    rows = conn.execute(
        f"SELECT attempt_id FROM worker_attempts WHERE ended_ms IS NULL AND {_PLACED}"
    ).fetchall()
    return {str(r[0]) for r in rows}


def resumable_sessions(conn: sqlite3.Connection) -> tuple[str, ...]:
    """Sessions with queued turns that may still run them (not stopped or failed)."""
    rows = conn.execute(
        f"SELECT DISTINCT s.session_id FROM {UNFINISHED_TURNS_OF_SESSIONS}"
        " WHERE t.state = 'queued' AND s.state NOT IN ('stopped', 'failed')"
    ).fetchall()
    return tuple(r[0] for r in rows)
