"""The Session kind's rows for the one write path (`actors._write`): the `sessions` row as
created (`SESSION_ROWS`, the creation row of `session.create`) and as its lifecycle moves it
(`SESSION_LIFE_ROWS`: state and revision, compare-and-set), the `turns` rows (`TURN_ROWS`:
insert in send order, compare-and-set with the started/finished columns), the journal they
write to (every event is owned by the Session, so its history has one gap-free sequence;
turn events carry their `turnId`) and their events' bodies. The columns outside the
lifecycle (activity, title, archive) and the reads and the attempt sweep of a Node start
(`_recovery`) live here too.
"""

from __future__ import annotations

import sqlite3
from typing import Any, Final

import attrs

from actors._table import Transition
from actors._write import EventOwner

from ._lifecycles import TURN_TABLE, SessionEvent, SessionState, TurnEvent, TurnState


@attrs.frozen
class SessionRecord:
    """A Session's row as its actor holds it."""

    id: str
    project_id: str
    executor: str
    cwd: str
    title: str | None = None
    labels: str = "{}"  # JSON object of label -> value
    state: SessionState = SessionState.IDLE
    revision: int = 0
    activity: str = "stopped"


class SessionRows:
    """The `sessions` table for the write path."""

    resource = "session"

    def insert(self, conn: sqlite3.Connection, record: SessionRecord, now_ms: int) -> None:
        conn.execute(
            "INSERT INTO sessions (session_id, project_id, executor, title, labels, cwd, state,"
            " activity, revision, created_ms, updated_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (record.id, record.project_id, record.executor, record.title, record.labels,
             record.cwd, record.state.value, record.activity, record.revision, now_ms, now_ms),
        )  # fmt: skip

    def update(self, conn: sqlite3.Connection, before: SessionRecord, after: SessionRecord,
               now_ms: int) -> bool:  # fmt: skip
        return conn.execute(
            "UPDATE sessions SET state = ?, revision = ?, title = ?, labels = ?, activity = ?,"
            " updated_ms = ? WHERE session_id = ? AND revision = ?",
            (after.state.value, after.revision, after.title, after.labels, after.activity,
             now_ms, after.id, before.revision),
        ).rowcount == 1  # fmt: skip

    def owner(self, record: SessionRecord) -> EventOwner:
        return EventOwner(record.id, "session", record.project_id, record.id)

    def payload(self, row: Transition[Any, Any], after: SessionRecord) -> dict[str, Any]:
        if row.event is SessionEvent.CREATE:
            return {"executor": after.executor, "title": after.title, "cwd": after.cwd}
        return {"state": row.target.value, "from": row.state.value}


SESSION_ROWS = SessionRows()


@attrs.frozen
class SessionLife:
    """The lifecycle of a Session's row: what its transitions move."""

    id: str
    project_id: str
    state: SessionState
    revision: int


class SessionLifeRows:
    """The `sessions` row as its lifecycle moves it (created by `SESSION_ROWS`)."""

    resource = "session"

    def insert(self, conn: sqlite3.Connection, record: SessionLife, now_ms: int) -> None:
        raise TypeError("a Session's row is created by SESSION_ROWS (session.create)")

    def update(self, conn: sqlite3.Connection, before: SessionLife, after: SessionLife,
               now_ms: int) -> bool:  # fmt: skip
        return conn.execute(
            "UPDATE sessions SET state = ?, revision = ?, updated_ms = ?"
            " WHERE session_id = ? AND revision = ?",
            (after.state.value, after.revision, now_ms, after.id, before.revision),
        ).rowcount == 1  # fmt: skip

    def owner(self, record: SessionLife) -> EventOwner:
        return EventOwner(record.id, "session", record.project_id, record.id)

    def payload(self, row: Transition[Any, Any], after: SessionLife) -> dict[str, Any]:
        return {"state": row.target.value, "from": row.state.value}


SESSION_LIFE_ROWS = SessionLifeRows()


@attrs.frozen
class TurnRecord:
    """A turn's row as a transition moves it (`reason`: why a terminal turn failed)."""

    id: str
    session_id: str
    project_id: str
    state: TurnState
    revision: int
    text: str = ""
    seq: int = 0
    reason: str | None = None


class TurnRows:
    """The `turns` rows: queued in send order, then moved by the turn table."""

    resource = "turn"

    def insert(self, conn: sqlite3.Connection, record: TurnRecord, now_ms: int) -> None:
        conn.execute(
            "INSERT INTO turns (turn_id, session_id, seq, state, revision, text, created_ms)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)",
            (record.id, record.session_id, record.seq, record.state.value, record.revision,
             record.text, now_ms),
        )  # fmt: skip
        conn.execute(
            "UPDATE sessions SET latest_turn_id = ? WHERE session_id = ?",
            (record.id, record.session_id),
        )

    def update(self, conn: sqlite3.Connection, before: TurnRecord, after: TurnRecord,
               now_ms: int) -> bool:  # fmt: skip
        sets = "state = ?, revision = ?"
        args: list[Any] = [after.state.value, after.revision]
        if after.state is TurnState.RUNNING and before.state is not TurnState.RUNNING:
            sets += ", started_ms = ?"
            args.append(now_ms)
        if after.state in TURN_TABLE.terminal:
            sets += ", finished_ms = ?, failure_reason = ?"
            args += [now_ms, after.reason]
        return conn.execute(
            f"UPDATE turns SET {sets} WHERE turn_id = ? AND revision = ?",
            (*args, after.id, before.revision),
        ).rowcount == 1  # fmt: skip

    def owner(self, record: TurnRecord) -> EventOwner:
        return EventOwner(record.session_id, "session", record.project_id, record.session_id)

    def payload(self, row: Transition[Any, Any], after: TurnRecord) -> dict[str, Any]:
        if row.event is TurnEvent.SEND:
            return {"turnId": after.id, "seq": after.seq}
        return {"turnId": after.id, "state": row.target.value}


TURN_ROWS = TurnRows()


def next_turn_seq(conn: sqlite3.Connection, session_id: str) -> int:
    """The send order of a Session's next turn."""
    return int(conn.execute("SELECT coalesce(max(seq), 0) + 1 FROM turns WHERE session_id = ?",
                            (session_id,)).fetchone()[0])  # fmt: skip


def set_activity_column(conn: sqlite3.Connection, session_id: str, activity: str) -> None:
    """The announced activity (no revision: it is not lifecycle state)."""
    conn.execute("UPDATE sessions SET activity = ? WHERE session_id = ?", (activity, session_id))


def set_columns(conn: sqlite3.Connection, session_id: str, sets: str,
                values: tuple[Any, ...]) -> None:  # fmt: skip
    """Columns outside the lifecycle a touched revision changes (a title, the archive)."""
    conn.execute(f"UPDATE sessions SET {sets} WHERE session_id = ?", (*values, session_id))


# -- what the actor reads, and the columns outside the lifecycle ----------------------------

PENDING_TURN_STATES: Final = ("queued", "dispatching", "running")


def session_and_pending_turns(conn: sqlite3.Connection,
                              session_id: str) -> tuple[Any, list[Any]]:  # fmt: skip
    """`(project_id, state, revision, activity, archived)` of the Session (None if there is
    none) and `(turn_id, state, revision, text)` of its pending turns in send order."""
    row = conn.execute(
        "SELECT project_id, state, revision, activity, archived FROM sessions WHERE session_id = ?",
        (session_id,),
    ).fetchone()
    turns = conn.execute(
        "SELECT turn_id, state, revision, text FROM turns WHERE session_id = ? AND state IN"
        f" ({_marks(PENDING_TURN_STATES)}) ORDER BY seq",
        (session_id, *PENDING_TURN_STATES),
    ).fetchall()
    return row, turns


def launch_row(conn: sqlite3.Connection, session_id: str) -> Any:
    """`(executor, cwd, conversation_id)`: what a worker launch needs."""
    return conn.execute(
        "SELECT executor, cwd, conversation_id FROM sessions WHERE session_id = ?", (session_id,)
    ).fetchone()


def archive_and_failure(conn: sqlite3.Connection, session_id: str) -> tuple[bool, str | None]:
    """Whether the Session is archived, and its kept failure message."""
    row = conn.execute(
        "SELECT archived, failure_message FROM sessions WHERE session_id = ?", (session_id,)
    ).fetchone()
    return (bool(row[0]), row[1]) if row is not None else (False, None)


def set_failure_message(conn: sqlite3.Connection, session_id: str, text: str | None) -> None:
    conn.execute(
        "UPDATE sessions SET failure_message = ? WHERE session_id = ? AND failure_message IS NOT ?",
        (text, session_id, text),
    )


def set_conversation(conn: sqlite3.Connection, session_id: str, conversation_id: str) -> bool:
    """Keep the harness's conversation id; False when it is the one already kept."""
    return conn.execute(
        "UPDATE sessions SET conversation_id = ? WHERE session_id = ? AND conversation_id IS NOT ?",
        (conversation_id, session_id, conversation_id),
    ).rowcount > 0  # fmt: skip


def insert_item(conn: sqlite3.Connection, item_id: str, turn_id: str, seq: int, kind: str,
                text: str, state: str, now_ms: int, data: str | None = None) -> None:  # fmt: skip
    conn.execute(
        "INSERT INTO turn_items (item_id, turn_id, seq, kind, text, state, created_ms,"
        " updated_ms, data) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (item_id, turn_id, seq, kind, text, state, now_ms, now_ms, data),
    )


def update_item(conn: sqlite3.Connection, item_id: str, text: str, state: str,
                now_ms: int) -> None:  # fmt: skip
    conn.execute(
        "UPDATE turn_items SET text = ?, state = ?, updated_ms = ? WHERE item_id = ?",
        (text, state, now_ms, item_id),
    )


def truncate_item(conn: sqlite3.Connection, item_id: str, artifact: str) -> None:
    """The rest of the item's text is in the artifact."""
    conn.execute(
        "UPDATE turn_items SET truncated = 1, artifact = ? WHERE item_id = ?", (artifact, item_id)
    )


# What a Node start reads and closes (`_recovery`); the states come from the tables'
# recovery column, so this module holds the SQL and the tables hold the decision.


def _marks(values: tuple[str, ...]) -> str:
    return ", ".join("?" * len(values))


def sessions_to_recover(
    conn: sqlite3.Connection, states: tuple[str, ...], also: tuple[str, ...] = ()
) -> list[tuple[str, str, str, int, str]]:
    """`(session_id, project_id, state, revision, activity)` of every Session in `states`,
    and of the Sessions named in `also` (those with a turn to recover) that are not."""
    rows = conn.execute(
        "SELECT session_id, project_id, state, revision, activity FROM sessions"
        f" WHERE state IN ({_marks(states)})",
        states,
    ).fetchall()
    known = {row[0] for row in rows}
    extra = tuple(s for s in also if s not in known)
    if extra:
        rows += conn.execute(
            "SELECT session_id, project_id, state, revision, activity FROM sessions"
            f" WHERE session_id IN ({_marks(extra)})",
            extra,
        ).fetchall()
    return rows


def turns_to_recover(
    conn: sqlite3.Connection, states: tuple[str, ...]
) -> list[tuple[str, str, str, int, str]]:
    """`(turn_id, session_id, state, revision, text)` of every turn in `states`."""
    return conn.execute(
        "SELECT turn_id, session_id, state, revision, text FROM turns"
        f" WHERE state IN ({_marks(states)})",
        states,
    ).fetchall()


def sessions_with_queued_turns(conn: sqlite3.Connection) -> set[str]:
    return {
        row[0]
        for row in conn.execute("SELECT DISTINCT session_id FROM turns WHERE state = 'queued'")
    }


def idle_sessions_with_worker(conn: sqlite3.Connection) -> tuple[str, ...]:
    """Idle Sessions whose announced activity says a worker was warm or wanted."""
    rows = conn.execute(
        "SELECT session_id FROM sessions WHERE state = 'idle' AND activity <> 'stopped'"
    ).fetchall()
    return tuple(r[0] for r in rows)


def close_open_attempts(conn: sqlite3.Connection, now_ms: int) -> None:
    """Every worker attempt the old Node left open ends `node_restarted`."""
    conn.execute(
        "UPDATE worker_attempts SET state = 'exited', ended_ms = ?, end_reason = 'node_restarted'"
        " WHERE ended_ms IS NULL",
        (now_ms,),
    )


def resumable_sessions(conn: sqlite3.Connection) -> tuple[str, ...]:
    """Sessions with queued turns that may still run them (not stopped or failed)."""
    rows = conn.execute(
        "SELECT DISTINCT t.session_id FROM turns t JOIN sessions s USING (session_id)"
        " WHERE t.state = 'queued' AND s.state NOT IN ('stopped', 'failed')"
    ).fetchall()
    return tuple(r[0] for r in rows)
