"""The Session actor's transaction: its memory as one write leaves it, on the one write path.

A Session's transitions are decided as they are written (a batch of sends, or a turn's end
with the next turn's dispatch, is one transaction), so the actor runs them through
`WritePath.transact`/`mutate` (`actors._write.Tx`): the actor copies what it knows into a
`Draft` bound to the transaction, each step applies a table row through `Tx.apply` (the
table's refusal before anything is written, compare-and-set on the revision the actor
holds, the row's event, its receipt target) and moves the draft with the row as written,
and only after the commit does the actor adopt the draft. The SQL is the kind's `_sql`.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

import attrs

from actors._moved import moved
from actors._table import Transition
from actors._timers import Wake
from actors._write import Change, EventOwner, Tx
from maia.core import MaiaError
from maia.protocol import Turn
from storage import Envelope, ReceiptTarget, current_envelope

from . import _sql as sql
from . import _sql_turns as turns_sql
from ._core import Arm, EndTurn, SessionStep, Step, TurnStep, end_events
from ._lazy_wakes import lazy_wake
from ._lifecycles import (
    CLIENT,
    NODE,
    SESSION_TABLE,
    TURN_TABLE,
    WORKER,
    SessionEvent,
    SessionState,
    TurnEvent,
    TurnState,
)
from ._messages import WALL_TIME
from ._status import status_of
from ._views import assembled_output, ended_turn_view

KnownItem = tuple[int, str, str, str, str]  # an item as written: seq, ID, kind, state, text


@attrs.define
class TurnMemo:
    """What the actor keeps about one pending turn."""

    turn_id: str
    state: TurnState
    revision: int
    text: str
    cause: Envelope | None = None  # set at dispatch: what its worker's events carry
    # Its turn.send's correlation, kept from the send (None when loaded from storage: then
    # the send's receipt says it, `_envelope`).
    correlation: str | None = None
    # The view its turn.send answered with (None when loaded from storage): its dispatch's
    # view is that one at its new state and revision, and its end's, when it completes with
    # every item known (`items`), that one with its times and output: no read.
    view: Turn | None = None
    started_ms: int | None = None  # when this actor wrote its start
    # The items this actor wrote for it, in order: (seq, item ID, kind, state, text); None
    # once one was written another way (a tool's item, usage, an item cut to an artifact)
    # or for a turn loaded from storage: then its views are read back.
    items: list[KnownItem] | None = None


@attrs.define
class Draft:
    """The Session as one transaction leaves it; adopted by the actor after the commit.
    `bind` ties it to its transaction (`tx`), whose event IDs and receipt targets it shows."""

    session_id: str
    project_id: str
    state: SessionState
    revision: int
    activity: str
    turns: dict[str, TurnMemo]
    now: int
    tx: Tx | None = None
    session_changed: bool = False
    touched: set[str] = attrs.field(factory=set)  # turns this transaction changed
    # Views already read in this transaction (a send's result), reused for the commit's
    # snapshots; a turn's entry is dropped whenever its row or items change again.
    views: dict[str, Turn] = attrs.field(factory=dict)
    # The lazy timers (`_lazy_wakes`): each row's due as armed, and the deadline meant now.
    armed: dict[str, int] = attrs.field(factory=dict)
    wanted: dict[str, tuple[int, str | None]] = attrs.field(factory=dict)
    next_seq: int | None = None  # the send order of the next turn, once read from storage
    # Row columns this transaction changes, written with its next lifecycle UPDATE (or by
    # `flush_columns` at its end); `activity_written`: the activity the column holds now.
    staged_activity: str | None = None
    staged_latest: str | None = None
    activity_written: str | None = None
    # What this transaction wrote of the turn buffer (item -> (text length, completed);
    # "started" -> the turn), and the marks the actor sets once it commits: the buffer is
    # memory outside the draft, so a rolled-back (or replayed) run must leave it as it was.
    buffered: dict[str, Any] = attrs.field(factory=dict)
    ended: dict[str, str] = attrs.field(factory=dict)  # turns ended here -> their prompt
    # Turns ended here whose every item this actor wrote -> those items (their first page).
    ended_items: dict[str, list[KnownItem]] = attrs.field(factory=dict)
    on_commit: list[Callable[[], None]] = attrs.field(factory=list)
    owner_memo: EventOwner | None = None  # `owner()`, made once per draft
    # The turns whose memo this draft made or copied (`memo`): the others are shared with
    # the memory it was copied from, which a failed or replayed run must leave as it was.
    owned: set[str] = attrs.field(factory=set)
    # Turns whose last moves this transaction has not written yet (`turn_step(defer=True)`):
    # the row as stored, and whether those moves start the turn. Their next move writes
    # them with its own UPDATE, else `flush_columns` does, before any read of the row.
    unwritten: dict[str, tuple[turns_sql.TurnRecord, bool]] = attrs.field(factory=dict)

    @property
    def event_ids(self) -> list[str]:
        return self._tx.event_ids

    @property
    def targets(self) -> list[ReceiptTarget]:
        return self._tx.targets

    @property
    def _tx(self) -> Tx:
        if self.tx is None:
            raise RuntimeError(f"session {self.session_id}: the draft is bound to no write")
        return self.tx

    def bind(self, tx: Tx) -> Draft:
        self.tx, self.now = tx, tx.now
        return self

    def memo(self, turn_id: str) -> TurnMemo | None:
        """The pending turn's memo, this draft's own to change (copied on first use)."""
        memo = self.turns.get(turn_id)
        if memo is None or turn_id in self.owned:
            return memo
        memo = self.turns[turn_id] = _copied(memo)
        self.owned.add(turn_id)
        return memo

    def snapshot(self) -> tuple[Draft, Any]:
        """A full copy (turn memos and the transaction's marks too), to `restore` if a step
        fails midway (its savepoint rolled back)."""
        copy = self.copy(self.now)
        copy.turns = {k: _copied(v) for k, v in self.turns.items()}  # this draft changes its own
        copy.owned = set(copy.turns)  # restored, they are the draft's alone
        copy.touched, copy.session_changed = set(self.touched), self.session_changed
        copy.views = dict(self.views)
        copy.staged_activity, copy.staged_latest = self.staged_activity, self.staged_latest
        copy.activity_written = self.activity_written
        copy.buffered, copy.on_commit = dict(self.buffered), list(self.on_commit)
        copy.ended, copy.ended_items = dict(self.ended), dict(self.ended_items)
        copy.unwritten = dict(self.unwritten)
        return copy, self._tx.mark()

    def restore(self, snapshot: tuple[Draft, Any]) -> None:
        copy, mark = snapshot
        for field in attrs.fields(Draft):
            if field.name != "tx":
                setattr(self, field.name, getattr(copy, field.name))
        self._tx.rewind(mark)

    def copy(self, now: int) -> Draft:
        """The memory for the next transaction: its turn memos shared until one is changed
        (`memo` copies it then), so a commit copies only the turns it moves."""
        return Draft(self.session_id, self.project_id, self.state, self.revision,
                     self.activity, dict(self.turns), now, armed=dict(self.armed),
                     wanted=dict(self.wanted), next_seq=self.next_seq)  # fmt: skip

    def owner(self) -> EventOwner:
        """Whose journal its events go to: the Session's (its turns' events too)."""
        owner = self.owner_memo
        if owner is None:
            owner = self.owner_memo = sql.SESSION_LIFE_ROWS.owner(self.life())
        return owner

    def life(self) -> sql.SessionLife:
        return sql.SessionLife(self.session_id, self.project_id, self.state, self.revision,
                               self.staged_activity, self.staged_latest)  # fmt: skip

    def columns_written(self) -> None:
        """A lifecycle UPDATE wrote the staged columns."""
        if self.staged_activity is not None:
            self.activity_written, self.staged_activity = self.staged_activity, None
        self.staged_latest = None

    def stage_activity(self, activity: str) -> None:
        """The activity this transaction will announce, to write with its next lifecycle
        UPDATE (`set_activity` announces it)."""
        if activity != self.activity:
            self.staged_activity = activity


def _copied(memo: TurnMemo) -> TurnMemo:
    # Direct construction: attrs.evolve per memo was a visible share of each commit.
    items = None if memo.items is None else list(memo.items)
    return TurnMemo(memo.turn_id, memo.state, memo.revision, memo.text, memo.cause,
                    memo.correlation, memo.view, memo.started_ms, items)  # fmt: skip


def emit(conn: sqlite3.Connection, draft: Draft, event_type: str, payload: dict[str, Any],
         *, revision: int | None = None, actor_id: str | None = None) -> str:  # fmt: skip
    """Append one event outside the lifecycle, owned by the draft's Session; its ID."""
    return draft._tx.event(draft.owner(), event_type, payload, revision, actor_id)


def session_step(conn: sqlite3.Connection, draft: Draft, event: SessionEvent,
                 *, caller: str = NODE, payload: dict[str, Any] | None = None) -> None:  # fmt: skip
    """Apply one Session table row. Raises the table's refusal (nothing written)."""
    before = status_of(draft.state.value, draft.activity)
    row = SESSION_TABLE.step(draft.state, event, caller=caller, aggregate_id=draft.session_id,
                             revision=draft.revision)  # fmt: skip
    life = draft.life()
    after = sql.SessionLife(life.id, life.project_id, row.target, life.revision + 1,
                            life.activity, life.latest_turn_id)  # fmt: skip
    # No state timer: the worker supervisor bounds a start, the handle a stop (docs/actors.md);
    # no receipt target: the command's own write names the Session.
    draft._tx.move(sql.SESSION_LIFE_ROWS, row, life, after, payload, owner=draft.owner(),
                   receipt=False)  # fmt: skip
    draft.state, draft.revision, draft.session_changed = after.state, after.revision, True
    draft.columns_written()
    _announce_status(conn, draft, before)


def touch_session(conn: sqlite3.Connection, draft: Draft, sets: str,
                  values: tuple[Any, ...]) -> None:  # fmt: skip
    """A change outside the lifecycle (a title, the archive): one revision, same guard."""
    life = draft.life()
    after = draft._tx.apply(Change(sql.SESSION_LIFE_ROWS, SESSION_TABLE, life, life, (),
                                   touch=True, receipt=False, timer=False))  # fmt: skip
    draft.columns_written()
    sql.set_columns(conn, draft.session_id, sets, values)
    draft.revision = after.revision


def _announce_status(conn: sqlite3.Connection, draft: Draft, before: str) -> None:
    """Emit `session.status.changed` when the draft's status is no longer `before`."""
    after = status_of(draft.state.value, draft.activity)
    if after != before:
        emit(conn, draft, "session.status.changed", {"status": after, "from": before})


def set_activity(conn: sqlite3.Connection, draft: Draft, activity: str) -> None:
    """Record the Session's announced activity (no revision: it is not lifecycle state)."""
    if activity == draft.activity:
        return
    if draft.activity_written != activity:  # not yet written with a lifecycle UPDATE
        sql.set_activity_column(conn, draft.session_id, activity)
    draft.staged_activity, draft.activity_written = None, activity
    emit(conn, draft, "session.activity.changed", {"activity": activity, "from": draft.activity})
    before = status_of(draft.state.value, draft.activity)
    draft.activity = activity
    _announce_status(conn, draft, before)


def insert_turn(conn: sqlite3.Connection, draft: Draft, turn_id: str, text: str) -> None:
    """A new queued turn, last in send order: the turn table's creation row (`turn.queued`,
    its receipt target)."""
    seq = turns_sql.next_turn_seq(conn, draft.session_id) if draft.next_seq is None else (
        draft.next_seq)  # fmt: skip
    draft.next_seq = seq + 1
    made = _TURN_CREATION
    TURN_TABLE.check_caller(made, CLIENT, turn_id)
    record = turns_sql.TurnRecord(turn_id, draft.session_id, draft.project_id, made.target, 1,
                                  text, seq)  # fmt: skip
    draft._tx.create(turns_sql.TURN_ROWS, made, record, owner=draft.owner(),
                     owner_revision=draft.revision)  # fmt: skip
    correlation = current_envelope().correlation_id  # the send's (`run_mutation`)
    draft.turns[turn_id] = TurnMemo(turn_id, TurnState.QUEUED, 1, text, correlation=correlation,
                                    items=[])  # fmt: skip
    draft.owned.add(turn_id)
    draft.staged_latest = turn_id  # the Session's latest turn (`flush_columns` at the latest)
    draft.touched.add(turn_id)


def _creation() -> Transition[TurnState, TurnEvent]:
    made = TURN_TABLE.creation
    if made is None:
        raise TypeError("the turn table has no creation row")
    return made


_TURN_CREATION = _creation()  # `turn.send`'s row: a new turn, queued
_DISPATCHING, _RUNNING, _COMPLETED = TurnState.DISPATCHING, TurnState.RUNNING, TurnState.COMPLETED


def wake(draft: Draft, timer: Wake) -> None:
    """Arm (or cancel) one of the Session's durable timers in the draft's transaction; a
    per-turn one only when its row must change (`_lazy_wakes`)."""
    if lazy_wake(draft, timer):
        draft._tx.wake(timer)


def flush_columns(conn: sqlite3.Connection, draft: Draft) -> None:
    """Write the staged row columns no lifecycle UPDATE wrote, and the turn moves not yet
    written (before the row is read, and at the end of each transaction)."""
    while draft.unwritten:
        turn_id, (stored, started) = draft.unwritten.popitem()
        memo = draft.turns[turn_id]  # a deferred move is never a turn's last (`turn_step`)
        draft._tx.write_row(turns_sql.TURN_ROWS, stored, turns_sql.TurnRecord(
            turn_id, draft.session_id, draft.project_id, memo.state, memo.revision,
            started=started))  # fmt: skip
    if draft.staged_latest is not None:
        sql.set_latest_turn(conn, draft.session_id, draft.staged_latest)
        draft.staged_latest = None
    if draft.staged_activity is not None:
        sql.set_activity_column(conn, draft.session_id, draft.staged_activity)
        draft.activity_written, draft.staged_activity = draft.staged_activity, None


def wake_now(draft: Draft, timer: Wake) -> None:
    """Write `timer`'s row change in the draft's transaction, lazy name or not."""
    draft._tx.wake(timer)


def _missing_turn(turn_id: str) -> MaiaError:
    return MaiaError("turn_not_queued", f"turn {turn_id} already left the queue",
                     {"turnId": turn_id})  # fmt: skip


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
    defer: bool = False,
) -> TurnMemo:
    """Apply one turn table row to a pending turn; a terminal turn leaves the draft's turns.
    `defer`: its event now, its row with the turn's next move in this transaction (one
    UPDATE for a start and the end that follows it), else at the end (`flush_columns`); a
    terminal row is never deferred.

    Raises the table's refusal (`turn_not_queued`, `invalid_state`, `revision_conflict`).
    """
    memo = draft.memo(turn_id)
    if memo is None:
        raise _missing_turn(turn_id)
    state, revision = memo.state, memo.revision
    row = TURN_TABLE.step(state, event, caller=caller, aggregate_id=turn_id,
                          expected_revision=expected_revision, revision=revision)  # fmt: skip
    session_id, project_id = draft.session_id, draft.project_id
    before = turns_sql.TurnRecord(turn_id, session_id, project_id, state, revision)
    # The row as stored, when earlier moves of this transaction are not written yet.
    stored, started = draft.unwritten.pop(turn_id, (None, False))
    started = started or (row.target is _RUNNING and state is not _RUNNING)
    after = turns_sql.TurnRecord(turn_id, session_id, project_id, row.target, revision + 1,
                                 reason=reason, started=started)  # fmt: skip
    body = payload
    if reason is not None:
        body = {**(payload or {}), "reason": reason}
    write = not defer or row.target in TURN_TABLE.terminal
    # No state timer: the handle bounds a dispatch and an interrupt (docs/actors.md).
    draft._tx.move(turns_sql.TURN_ROWS, row, before, after, body, owner=draft.owner(),
                   write=write, stored=stored, owner_revision=draft.revision)  # fmt: skip
    if not write:
        draft.unwritten[turn_id] = (before if stored is None else stored, started)
    memo.state, memo.revision = after.state, after.revision
    draft.touched.add(turn_id)
    if after.state is _RUNNING and state is not _RUNNING:
        memo.started_ms = draft.now  # as `TURN_ROWS` writes its started_ms
    base = memo.view
    if base is not None and state is TurnState.QUEUED and after.state is _DISPATCHING:
        # Dispatched from the queue: what turn_view would read back is the send's view at
        # its new state and revision (a queued turn has no start, end, item or usage yet).
        draft.views[turn_id] = moved(base, _DISPATCHING.value, after.revision)
    elif (base is not None and after.state is _COMPLETED and memo.items is not None
          and memo.started_ms is not None):  # fmt: skip
        output = assembled_output([(i[4], False) for i in memo.items if i[2] == "message"])
        draft.views[turn_id] = ended_turn_view(base, _COMPLETED.value, after.revision,
                                               memo.started_ms, draft.now, output)  # fmt: skip
    else:
        draft.views.pop(turn_id, None)
    if after.state in TURN_TABLE.terminal:
        del draft.turns[turn_id]
        draft.ended[turn_id] = memo.text
        if turn_id in draft.views and memo.items is not None:
            draft.ended_items[turn_id] = memo.items
    return memo


def end_turn(conn: sqlite3.Connection, draft: Draft, turn_id: str, outcome: str,
             reason: str | None = None) -> None:  # fmt: skip
    """Finish a dispatched turn as the worker (or its loss) says: completed, failed,
    interrupted, lost (the rows: `_core.end_events`); its wall time is disarmed."""
    memo = draft.turns.get(turn_id)
    if memo is None:
        return
    # Its wall time is moot (the next turn's dispatch in the same write re-arms it instead).
    wake(draft, Wake(WALL_TIME, cancel=True))
    # Its start (when it has none yet) and its end: one UPDATE, both events.
    for step in end_events(memo.state, outcome, reason):
        caller = NODE if step.event is TurnEvent.RUNTIME_LOST else WORKER
        turn_step(conn, draft, turn_id, step.event, caller=caller, reason=step.reason,
                  defer=True)  # fmt: skip


def apply_plan(conn: sqlite3.Connection, draft: Draft, plan: list[Step], *,
               dispatching: Callable[[str], AbstractContextManager[Any]] | None = None,
               ) -> None:  # fmt: skip
    """Apply the pure core's plan (`_core`) in the draft's transaction, in order; a turn's
    dispatch inside `dispatching(turn_id)` (its envelope: see `_envelope`)."""
    for step in plan:
        match step:
            case TurnStep(turn_id, TurnEvent.DISPATCH, reason, payload) if dispatching:
                with dispatching(turn_id):
                    turn_step(conn, draft, turn_id, TurnEvent.DISPATCH, reason=reason,
                              payload=dict(payload))  # fmt: skip
            case SessionStep(event):
                session_step(conn, draft, event)
            case TurnStep(turn_id, event, reason, payload):
                turn_step(conn, draft, turn_id, event, reason=reason, payload=dict(payload))
            case EndTurn(turn_id, outcome, reason):
                end_turn(conn, draft, turn_id, outcome, reason)
            case Arm(timer):
                wake(draft, timer)
