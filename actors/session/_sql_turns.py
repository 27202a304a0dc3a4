"""The Session kind's `turns` rows for the one write path (`actors._write`): `TURN_ROWS`
(insert in send order, compare-and-set with the started/finished columns; turn events are
owned by their Session and carry their `turnId`), the pending turns a Session rehydrates
with, and the `turn_items` rows of a turn's output.
"""

from __future__ import annotations

import sqlite3
from typing import Any, Final

import attrs

from actors._table import Transition
from actors._write import EventOwner
from storage import claim_receipt_target

from ._lifecycles import TURN_TABLE, TurnEvent, TurnState


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
    # This move writes a start it passes through (a start written with the turn's end, one
    # UPDATE from dispatching: `_store.turn_step`), so it sets started_ms too.
    started: bool = False


class TurnRows:
    """The `turns` rows: queued in send order, then moved by the turn table."""

    resource = "turn"

    def insert(self, conn: sqlite3.Connection, record: TurnRecord, now_ms: int) -> None:
        # The send's receipt is found through its turn, not the receipts' target index.
        receipt = claim_receipt_target(conn, record.id)
        conn.execute(
            "INSERT INTO turns (turn_id, session_id, seq, state, revision, text, created_ms,"
            " send_receipt) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (record.id, record.session_id, record.seq, record.state.value, record.revision,
             record.text, now_ms, receipt),
        )  # fmt: skip
        # The Session's latest_turn_id is the actor's to write (`_store.insert_turn`), with
        # its lifecycle UPDATE when the same transaction has one.

    def update(self, conn: sqlite3.Connection, before: TurnRecord, after: TurnRecord,
               now_ms: int) -> bool:  # fmt: skip
        state = after.state
        started = after.started or (state is TurnState.RUNNING
                                    and before.state is not TurnState.RUNNING)  # fmt: skip
        # One of four statements built once (a string built per call is hashed again by the
        # statement cache), its parameters in one tuple.
        value, revision, turn_id, prior = state.value, after.revision, after.id, before.revision
        if state in TURN_TABLE.terminal:
            if started:
                args: tuple[Any, ...] = (value, revision, now_ms, now_ms, after.reason,
                                         turn_id, prior)  # fmt: skip
                return conn.execute(_UPDATE_STARTED_ENDED, args).rowcount == 1
            args = (value, revision, now_ms, after.reason, turn_id, prior)
            return conn.execute(_UPDATE_ENDED, args).rowcount == 1
        if started:
            args = (value, revision, now_ms, turn_id, prior)
            return conn.execute(_UPDATE_STARTED, args).rowcount == 1
        return conn.execute(_UPDATE, (value, revision, turn_id, prior)).rowcount == 1

    def owner(self, record: TurnRecord) -> EventOwner:
        return EventOwner(record.session_id, "session", record.project_id, record.session_id)

    def payload(self, row: Transition[Any, Any], after: TurnRecord) -> dict[str, Any]:
        # The event is the Session's (its revision): the turn's own revision rides here.
        if row.event is TurnEvent.SEND:
            return {"turnId": after.id, "seq": after.seq, "turnRevision": after.revision}
        return {"turnId": after.id, "state": row.target.value, "turnRevision": after.revision}


_UPDATE: Final = "UPDATE turns SET state = ?, revision = ? WHERE turn_id = ? AND revision = ?"
_UPDATE_STARTED: Final = (
    "UPDATE turns SET state = ?, revision = ?, started_ms = ? WHERE turn_id = ? AND revision = ?"
)
_UPDATE_ENDED: Final = (
    "UPDATE turns SET state = ?, revision = ?, finished_ms = ?, failure_reason = ?"
    " WHERE turn_id = ? AND revision = ?"
)
_UPDATE_STARTED_ENDED: Final = (
    "UPDATE turns SET state = ?, revision = ?, started_ms = ?, finished_ms = ?,"
    " failure_reason = ? WHERE turn_id = ? AND revision = ?"
)
TURN_ROWS = TurnRows()


def turn_state(conn: sqlite3.Connection, turn_id: str) -> str | None:
    """The state stored for `turn_id` (None: no such turn)."""
    row = conn.execute("SELECT state FROM turns WHERE turn_id = ?", (turn_id,)).fetchone()
    return None if row is None else str(row[0])


def next_turn_seq(conn: sqlite3.Connection, session_id: str) -> int:
    """The send order of a Session's next turn."""
    return int(conn.execute("SELECT coalesce(max(seq), 0) + 1 FROM turns WHERE session_id = ?",
                            (session_id,)).fetchone()[0])  # fmt: skip


PENDING_TURN_STATES: Final = ("queued", "dispatching", "running")
# The unfinished states as the triggers that keep `sessions.unfinished_from` name them
# (migration `_PAGES_UNFINISHED_ON_SESSION`). Same states, same order.
UNFINISHED_TURNS: Final = "state IN ('queued', 'dispatching', 'running')"
# Unfinished turns across Sessions: each Session with any (`unfinished_from`, the lowest send
# order of its unfinished turns), then its turns from there through `UNIQUE (session_id,
# seq)`; there is no index of turns by state (every turn would move its entry twice). CROSS
# JOIN keeps `sessions` the outer loop (SQLite never reorders it), whatever the statistics.
UNFINISHED_TURNS_OF_SESSIONS: Final = (
    "sessions s CROSS JOIN turns t ON t.session_id = s.session_id AND t.seq >= s.unfinished_from"
)


# An item's row is keyed by its turn and place, `item_key = turn_no << 24 | seq` (migration
# `_PAGES_TURN_ITEMS_ON_TURN_KEY`): no index beside the table; the ID is checked on the row.
_ITEM_KEY: Final = "(SELECT (turn_no << 24) + ? FROM turns WHERE turn_id = ?)"
# The highest place a turn's item may take: its key has 24 bits for the place.
LAST_ITEM_PLACE: Final = (1 << 24) - 1
# The key range of a turn's items (bind the turn's ID twice), in `seq` order by key.
ITEMS_OF_TURN: Final = (
    "item_key BETWEEN (SELECT turn_no << 24 FROM turns WHERE turn_id = ?)"
    " AND (SELECT (turn_no << 24) + 16777215 FROM turns WHERE turn_id = ?)"
)

# The same range as a correlation, for a query over many turns: the items `i` of the turns
# row `t` (no parameters).
ITEMS_OF_TURN_ROW: Final = (
    f"i.item_key BETWEEN t.turn_no << 24 AND (t.turn_no << 24) + {LAST_ITEM_PLACE}"
)


def insert_item(conn: sqlite3.Connection, item_id: str, turn_id: str, seq: int, kind: str,
                text: str, state: str, now_ms: int, data: str | None = None) -> None:  # fmt: skip
    """Raises sqlite3.IntegrityError for an unknown turn or a place already taken."""
    values = (seq, turn_id, item_id, turn_id, seq, kind, text, state, now_ms, now_ms, data)
    conn.execute(_INSERT_ITEM, values)


# The item statements, built once (an f-string in the call is a new string each time).
_INSERT_ITEM: Final = (
    "INSERT INTO turn_items (item_key, item_id, turn_id, seq, kind, text, state, created_ms,"
    f" updated_ms, data) VALUES ({_ITEM_KEY}, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_UPDATE_ITEM: Final = (
    f"UPDATE turn_items SET text = ?, state = ?, updated_ms = ? WHERE item_key = {_ITEM_KEY}"
    " AND item_id = ?"
)
_TRUNCATE_ITEM: Final = (
    f"UPDATE turn_items SET truncated = 1, artifact = ? WHERE item_key = {_ITEM_KEY}"
    " AND item_id = ?"
)


def update_item(conn: sqlite3.Connection, item_id: str, turn_id: str, seq: int, text: str,
                state: str, now_ms: int) -> None:  # fmt: skip
    conn.execute(_UPDATE_ITEM, (text, state, now_ms, seq, turn_id, item_id))


def truncate_item(conn: sqlite3.Connection, item_id: str, turn_id: str, seq: int,
                  artifact: str) -> None:  # fmt: skip
    """The rest of the item's text is in the artifact."""
    conn.execute(_TRUNCATE_ITEM, (artifact, seq, turn_id, item_id))


def placeholders(values: tuple[str, ...]) -> str:
    """The `?, ?, …` of an `IN` list of `values`."""
    return ", ".join("?" * len(values))


def session_and_pending_turns(conn: sqlite3.Connection,
                              session_id: str) -> tuple[Any, list[Any]]:  # fmt: skip
    """`(project_id, state, revision, activity, archived)` of the Session (None if there is
    none) and `(turn_id, state, revision, text)` of its pending turns in send order (from its
    lowest unfinished one: none when `unfinished_from` is NULL)."""
    row = conn.execute(
        "SELECT project_id, state, revision, activity, archived, unfinished_from FROM sessions"
        " WHERE session_id = ?",
        (session_id,),
    ).fetchone()
    if row is None or row[5] is None:
        return (row[:5] if row is not None else None), []
    turns = conn.execute(
        "SELECT turn_id, state, revision, text FROM turns WHERE session_id = ? AND seq >= ?"
        f" AND state IN ({placeholders(PENDING_TURN_STATES)}) ORDER BY seq",
        (session_id, row[5], *PENDING_TURN_STATES),
    ).fetchall()
    return row[:5], turns
