"""The Session actor's writes: each transition as SQL on the connection of one transaction.

The actor never changes its memory before a commit (write-ahead). It copies what it knows
into a `Draft`, the write fn applies transitions to the draft and to the rows together
(state, revision, and the event the lifecycle table names for the row), and only after the
commit does the actor adopt the draft. A refused transition raises before anything is
written. Every event is owned by the Session, so one Session's history has one gap-free
sequence (turn and item events carry their `turnId` in the payload).

Hot path: plain UPDATE statements (no PRAGMA per call, as `compare_and_set` does), guarded by
the revision the actor holds, so a stale actor fails loudly instead of overwriting.
"""

from __future__ import annotations

import sqlite3
from typing import Any, Final

import attrs

from maia.core import MaiaError
from maia.protocol import Turn
from storage import Envelope, ReceiptTarget, append_event

from ._lifecycles import (
    NODE,
    SESSION_TABLE,
    TURN_TABLE,
    WORKER,
    SessionEvent,
    SessionState,
    TurnEvent,
    TurnState,
)
from ._status import status_of

PENDING_TURN_STATES: Final = ("queued", "dispatching", "running")


@attrs.define
class TurnMemo:
    """What the actor keeps about one pending turn."""

    turn_id: str
    state: TurnState
    revision: int
    text: str
    cause: Envelope | None = None  # set at dispatch: what its worker's events carry


@attrs.define
class Draft:
    """The Session as one transaction leaves it; adopted by the actor after the commit."""

    session_id: str
    project_id: str
    state: SessionState
    revision: int
    activity: str
    turns: dict[str, TurnMemo]
    now: int
    event_ids: list[str] = attrs.field(factory=list)
    targets: list[ReceiptTarget] = attrs.field(factory=list)
    session_changed: bool = False
    touched: set[str] = attrs.field(factory=set)  # turns this transaction changed
    # Views already read in this transaction (a send's result), reused for the commit's
    # snapshots; a turn's entry is dropped whenever its row or items change again.
    views: dict[str, Turn] = attrs.field(factory=dict)

    def snapshot(self) -> Draft:
        """A full copy (lists and turn memos too), to `restore` if a step fails midway."""
        copy = self.copy(self.now)
        copy.event_ids, copy.targets = list(self.event_ids), list(self.targets)
        copy.touched, copy.session_changed = set(self.touched), self.session_changed
        copy.views = dict(self.views)
        return copy

    def restore(self, snapshot: Draft) -> None:
        for field in attrs.fields(Draft):
            setattr(self, field.name, getattr(snapshot, field.name))

    def copy(self, now: int) -> Draft:
        # Direct construction: attrs.evolve per memo was a visible share of each commit.
        turns = {k: TurnMemo(v.turn_id, v.state, v.revision, v.text, v.cause)
                 for k, v in self.turns.items()}  # fmt: skip
        return Draft(self.session_id, self.project_id, self.state, self.revision,
                     self.activity, turns, now)  # fmt: skip


def _conflict(what: str, row_id: str) -> MaiaError:
    return MaiaError(
        "storage_conflict",
        f"{what} {row_id} changed underneath its actor",
        {"resource": what, "id": row_id},
    )


def emit(conn: sqlite3.Connection, draft: Draft, event_type: str, payload: dict[str, Any],
         *, revision: int | None = None, actor_id: str | None = None) -> str:  # fmt: skip
    """Append one event owned by the draft's Session; returns its ID."""
    record = append_event(
        conn,
        owner_id=draft.session_id,
        owner_type="session",
        event_type=event_type,
        payload=payload,
        now_ms=draft.now,
        aggregate_revision=revision,
        project_id=draft.project_id,
        session_id=draft.session_id,
        actor_id=actor_id,
    )
    draft.event_ids.append(record.event_id)
    return record.event_id


def session_step(conn: sqlite3.Connection, draft: Draft, event: SessionEvent,
                 *, caller: str = NODE, payload: dict[str, Any] | None = None) -> None:  # fmt: skip
    """Apply one Session table row. Raises the table's refusal (nothing written)."""
    row = SESSION_TABLE.step(draft.state, event, caller=caller, aggregate_id=draft.session_id)
    prior = draft.revision
    before = status_of(draft.state.value, draft.activity)
    changed = conn.execute(
        "UPDATE sessions SET state = ?, revision = revision + 1, updated_ms = ?"
        " WHERE session_id = ? AND revision = ?",
        (row.target.value, draft.now, draft.session_id, prior),
    ).rowcount
    if changed != 1:
        raise _conflict("session", draft.session_id)
    draft.state, draft.revision, draft.session_changed = row.target, prior + 1, True
    if row.emits is not None:
        body = {"state": row.target.value, "from": row.state.value, **(payload or {})}
        emit(conn, draft, row.emits, body, revision=draft.revision)
    _announce_status(conn, draft, before)


def _announce_status(conn: sqlite3.Connection, draft: Draft, before: str) -> None:
    """Emit `session.status.changed` when the draft's status is no longer `before`."""
    after = status_of(draft.state.value, draft.activity)
    if after != before:
        emit(conn, draft, "session.status.changed", {"status": after, "from": before})


def set_activity(conn: sqlite3.Connection, draft: Draft, activity: str) -> None:
    """Record the Session's announced activity (no revision: it is not lifecycle state)."""
    if activity == draft.activity:
        return
    conn.execute(
        "UPDATE sessions SET activity = ? WHERE session_id = ?", (activity, draft.session_id)
    )
    emit(conn, draft, "session.activity.changed", {"activity": activity, "from": draft.activity})
    before = status_of(draft.state.value, draft.activity)
    draft.activity = activity
    _announce_status(conn, draft, before)


def turn_step(
    conn: sqlite3.Connection,
    draft: Draft,
    turn_id: str,
    event: TurnEvent,
    *,
    caller: str = NODE,
    expected_revision: int | None = None,
    reason: str | None = None,
    payload: dict[str, Any] | None = None,
) -> TurnMemo:
    """Apply one turn table row to a pending turn; a terminal turn leaves the draft's turns.

    Raises the table's refusal (`turn_not_queued`, `invalid_state`, `revision_conflict`).
    """
    memo = draft.turns.get(turn_id)
    if memo is None:
        raise MaiaError("turn_not_queued", f"turn {turn_id} already left the queue",
                        {"turnId": turn_id})  # fmt: skip
    row = TURN_TABLE.step(memo.state, event, caller=caller, aggregate_id=turn_id,
                          expected_revision=expected_revision, revision=memo.revision)  # fmt: skip
    sets = "state = ?, revision = revision + 1"
    args: list[Any] = [row.target.value]
    if row.target is TurnState.RUNNING and memo.state is not TurnState.RUNNING:
        sets += ", started_ms = ?"
        args.append(draft.now)
    if row.target in TURN_TABLE.terminal:
        sets += ", finished_ms = ?, failure_reason = ?"
        args += [draft.now, reason]
    changed = conn.execute(
        f"UPDATE turns SET {sets} WHERE turn_id = ? AND revision = ?",
        (*args, turn_id, memo.revision),
    ).rowcount
    if changed != 1:
        raise _conflict("turn", turn_id)
    prior = memo.revision
    memo.state, memo.revision = row.target, prior + 1
    draft.touched.add(turn_id)
    draft.views.pop(turn_id, None)
    if row.target in TURN_TABLE.terminal:
        del draft.turns[turn_id]
    if row.emits is not None:
        body: dict[str, Any] = {"turnId": turn_id, "state": row.target.value, **(payload or {})}
        if reason is not None:
            body["reason"] = reason
        emit(conn, draft, row.emits, body, revision=memo.revision)
    if row.receipt:
        draft.targets.append(ReceiptTarget("turn", turn_id, "updated", prior, memo.revision))
    return memo


def end_turn(conn: sqlite3.Connection, draft: Draft, turn_id: str, outcome: str,
             reason: str | None = None) -> None:  # fmt: skip
    """Finish a dispatched turn as the worker (or its loss) says: completed, failed,
    interrupted, lost. A turn still dispatching is first marked started when it ran."""
    memo = draft.turns.get(turn_id)
    if memo is None:
        return
    if memo.state is TurnState.DISPATCHING:
        if outcome == "lost":
            turn_step(conn, draft, turn_id, TurnEvent.RUNTIME_LOST, reason=reason)
            return
        turn_step(conn, draft, turn_id, TurnEvent.STARTED, caller=WORKER)
    match outcome:
        case "completed":
            turn_step(conn, draft, turn_id, TurnEvent.COMPLETED, caller=WORKER)
        case "interrupted":
            turn_step(conn, draft, turn_id, TurnEvent.INTERRUPTED, caller=WORKER)
        case "lost":
            turn_step(conn, draft, turn_id, TurnEvent.RUNTIME_LOST, reason=reason)
        case _:
            turn_step(conn, draft, turn_id, TurnEvent.FAILED, caller=WORKER,
                      reason=reason or "turn_failed")  # fmt: skip


# -- items ----------------------------------------------------------------------------------


@attrs.define
class OpenItem:
    """A message item being streamed; `flushed_seq` is 0 until its row exists."""

    item_id: str
    turn_id: str
    seq: int
    kind: str
    text: str = ""
    completed: bool = False
    stored: bool = False
    stored_text_len: int = 0
    spill: Any = None  # a `_spill.Spill`: the text past the item bound, on disk


EVENT_TEXT_CHARS = 16_384  # of an item's text in its item.completed event


def flush_item(conn: sqlite3.Connection, draft: Draft, item: OpenItem) -> None:
    """Persist an item's text so far (insert once, then update); completing emits an event."""
    state = "completed" if item.completed else "started"
    draft.views.pop(item.turn_id, None)
    if not item.stored:
        conn.execute(
            "INSERT INTO turn_items (item_id, turn_id, seq, kind, text, state, created_ms,"
            " updated_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (item.item_id, item.turn_id, item.seq, item.kind, item.text, state, draft.now,
             draft.now),
        )  # fmt: skip
        item.stored = True
    else:
        conn.execute(
            "UPDATE turn_items SET text = ?, state = ?, updated_ms = ? WHERE item_id = ?",
            (item.text, state, draft.now, item.item_id),
        )
    item.stored_text_len = len(item.text)
    if item.completed and item.spill is not None:  # the rest of its text, in an artifact
        conn.execute("UPDATE turn_items SET truncated = 1, artifact = ? WHERE item_id = ?",
                     (item.spill.finish(), item.item_id))  # fmt: skip
    if item.completed:
        # The text lives in turn_items; the event carries at most its start (stored once).
        emit(conn, draft, "item.completed",
             {"turnId": item.turn_id, "itemId": item.item_id, "kind": item.kind,
              "text": item.text[:EVENT_TEXT_CHARS]})  # fmt: skip
