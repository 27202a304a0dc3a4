"""What clients ask of a Session actor: cancel and interrupt turns; stop, rename and archive
the Session. (A send is `SendBatch`'s, in `_batch`: every `turn.send` goes through it, so a
refusal says one thing whichever way it came.) Each is one transaction with its receipt; a
refusal is decided before the write but raised inside it, so a retried command that already
ran is answered with its stored result (`duplicate`) rather than refused.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from actors._timers import Wake
from maia.core import MaiaError, to_json
from storage import MutationResult, ReceiptTarget

from . import _queue as q
from . import _sql as sql
from ._actor import SessionCore
from ._attempt import TurnBuffer
from ._capacity import Capacity
from ._driver import WorkerDriver
from ._lifecycles import CLIENT, WORKER, SessionEvent, SessionState, TurnEvent, TurnState
from ._messages import (
    WALL_TIME,
    ArchiveSession,
    CancelTurn,
    InterruptTurn,
    RenameSession,
    StopSession,
)
from ._sql_turns import turn_state
from ._store import (
    Draft,
    emit,
    session_step,
    set_activity,
    touch_session,
    turn_step,
    wake,
)
from ._views import turn_view

_RESTING = (SessionState.IDLE, SessionState.STOPPED, SessionState.FAILED)


def _revision_conflict(draft_revision: int, expected: int | None, session_id: str) -> None:
    if expected is not None and expected != draft_revision:
        raise MaiaError(
            "revision_conflict",
            f"session {session_id} is at revision {draft_revision}",
            {"resource": "session", "id": session_id, "actual": draft_revision,
             "expected": expected},
        )  # fmt: skip


class ClientOps:
    """Turn cancels and interrupts; the Session's stop, rename and archive."""

    def __init__(self, core: SessionCore, capacity: Capacity, driver: WorkerDriver,
                 buffer: TurnBuffer) -> None:  # fmt: skip
        self.core = core
        self.capacity = capacity
        self.driver = driver
        self.buffer = buffer

    async def cancel_turn(self, message: CancelTurn) -> MutationResult:
        refusal: MaiaError | None = None
        after: q.QueueState = self.core.queue
        try:
            after, _ = q.step(self.core.queue, q.Cancel(message.turn_id), self.core.now())
        except MaiaError as error:
            refusal = error

        def apply(conn: sqlite3.Connection, draft: Draft) -> Any:
            if refusal is not None:
                raise refusal
            turn_step(
                conn,
                draft,
                message.turn_id,
                TurnEvent.CANCEL,
                caller=CLIENT,
                expected_revision=message.expected_revision,
                reason="turn_rejected",
            )
            self.core.apply_rows(conn, draft, after, ())
            return {"turn": to_json(turn_view(conn, message.turn_id))}

        result = await self.core.mutate("turn.cancel", message.command, apply)
        if result.delivery == "new":
            self.core.queue = after
            self.core.notify(message.turn_id)
        return result

    async def interrupt_turn(self, message: InterruptTurn) -> MutationResult:
        turn_id = message.turn_id
        memo = self.core.memory.turns.get(turn_id)
        refusal: MaiaError | None = None
        after: q.QueueState = self.core.queue
        actions: tuple[q.QueueAction, ...] = ()
        try:
            if memo is None:
                raise MaiaError("invalid_state", f"turn {turn_id} has ended",
                                {"resource": "turn", "id": turn_id, "state": "ended"})  # fmt: skip
            if message.expected_revision not in (None, memo.revision):
                raise MaiaError(
                    "revision_conflict",
                    f"turn {turn_id} is at revision {memo.revision}",
                    {"resource": "turn", "id": turn_id, "actual": memo.revision,
                     "expected": message.expected_revision},
                )  # fmt: skip
            after, actions = q.step(self.core.queue, q.Interrupt(turn_id), self.core.now())
        except MaiaError as error:
            if memo is not None and error.code == "invalid_state":
                # The queue keeps no turn states: the one the actor holds is the turn's.
                error.details.setdefault("state", memo.state.value)
            refusal = error
        started = self.buffer.started_unflushed(turn_id)
        abandoned = False
        if (refusal is None and message.abandon and not started and memo is not None
                and memo.state is TurnState.DISPATCHING):  # fmt: skip
            abandoning = q.step(self.core.queue, q.Abandon(turn_id), self.core.now())
            # Fenced before the write: a start read after this is dropped, so the turn the
            # write ends never runs (a write that fails leaves the fenced worker's exit to
            # end it, `worker_failed`).
            abandoned = self.driver.abandon(turn_id)
            if abandoned:
                after, actions = abandoning

        def apply(conn: sqlite3.Connection, draft: Draft) -> Any:
            if refusal is not None:
                if memo is None and (ended := turn_state(conn, turn_id)) is not None:
                    refusal.details["state"] = ended  # the state it ended in, read here
                raise refusal
            if abandoned:
                wake(draft, Wake(WALL_TIME, cancel=True))  # it never ran: no wall time
                turn_step(conn, draft, turn_id, TurnEvent.ABANDON, caller=CLIENT,
                          reason="turn_rejected")  # fmt: skip
            elif any(isinstance(a, q.FailTurn) for a in actions):  # it was still queued
                moved = turn_step(conn, draft, turn_id, TurnEvent.REJECT, reason="turn_rejected")
                # The Node's row names no target of its own: this one carries the revisions
                # it moved, as turn.cancel's does.
                draft.targets.append(ReceiptTarget("turn", turn_id, "updated",
                                                   moved.revision - 1, moved.revision))  # fmt: skip
            elif actions:
                if started:
                    turn_step(conn, draft, turn_id, TurnEvent.STARTED, caller=WORKER)
                turn_step(conn, draft, turn_id, TurnEvent.INTERRUPT, caller=CLIENT)
            self.core.apply_rows(conn, draft, after, ())
            return {"turn": to_json(turn_view(conn, turn_id))}

        result = await self.core.mutate("turn.interrupt", message.command, apply)
        if result.delivery == "new":
            if started:
                self.buffer.mark_started_flushed(turn_id)
            self.core.queue = after
            self.driver.after_commit(actions)
            self.core.notify(turn_id)
        return result

    async def stop_session(self, message: StopSession) -> MutationResult:
        now = self.core.now()
        after, actions = q.step(self.core.queue, q.Close(), now)

        def apply(conn: sqlite3.Connection, draft: Draft) -> Any:
            _revision_conflict(draft.revision, message.expected_revision, draft.session_id)
            prior = draft.revision
            session_step(conn, draft, SessionEvent.STOP, caller=CLIENT)
            self.core.apply_rows(conn, draft, after, actions)
            if draft.state is SessionState.STOPPING and after.worker is q.Worker.NONE:
                session_step(conn, draft, SessionEvent.STOPPED)
            self.core.session_target(draft, prior)
            _ended_turn_targets(conn, draft, actions, self.core.queue.active)
            return {"session": self.core.session_json(conn, draft)}

        result = await self.core.mutate("session.stop", message.command, apply)
        if result.delivery == "new":
            self.core.queue = after
            self.driver.after_commit(actions)
            self.capacity.settle_slot()
            self.core.notify(*(a.turn_id for a in actions if isinstance(a, q.FailTurn)))
        return result

    async def rename_session(self, message: RenameSession) -> MutationResult:
        def apply(conn: sqlite3.Connection, draft: Draft) -> Any:
            _revision_conflict(draft.revision, message.expected_revision, draft.session_id)
            prior = draft.revision
            touch_session(conn, draft, "title = ?", (message.title,))
            emit(conn, draft, "session.renamed", {"title": message.title},
                 revision=draft.revision, actor_id=message.command.actor_id)  # fmt: skip
            self.core.session_target(draft, prior)
            return {"session": self.core.session_json(conn, draft)}

        result = await self.core.mutate("session.rename", message.command, apply)
        self.core.notify()
        return result

    async def archive_session(self, message: ArchiveSession) -> MutationResult:
        # An idle Session's warm worker is let go with the archive (idle: no activation holds
        # it); the closed queue takes no more turns.
        after, actions = q.step(self.core.queue, q.Close(), self.core.now())

        def apply(conn: sqlite3.Connection, draft: Draft) -> Any:
            _revision_conflict(draft.revision, message.expected_revision, draft.session_id)
            archived, _ = sql.archive_and_failure(conn, draft.session_id)
            if archived or draft.state not in _RESTING or self.core.queue.pending:
                state = "archived" if archived else draft.state.value
                why = "already archived" if archived else f"{state}: stop it before archiving"
                raise MaiaError(
                    "invalid_state",
                    f"session {draft.session_id} is {why}",
                    {"resource": "session", "id": draft.session_id, "state": state},
                )
            prior = draft.revision
            touch_session(conn, draft, "archived = 1, archived_ms = ?, archive_summary = ?,"
                          " transcript_path = ?",
                          (draft.now, message.summary, message.transcript_path))  # fmt: skip
            emit(conn, draft, "session.archived",
                 {"summary": message.summary, "transcriptPath": message.transcript_path},
                 revision=draft.revision, actor_id=message.command.actor_id)  # fmt: skip
            set_activity(conn, draft, "stopped")
            self.core.session_target(draft, prior)
            return {"session": self.core.session_json(conn, draft)}

        result = await self.core.mutate("session.archive", message.command, apply)
        if result.delivery == "new":
            self.core.queue = after
            self.driver.after_commit(actions)  # the warm worker's stop, if one is warm
        self.core.notify()
        return result


def _ended_turn_targets(
    conn: sqlite3.Connection, draft: Draft, actions: tuple[q.QueueAction, ...], active: str | None
) -> None:
    """A stop's receipt names the turns it ends: each queued turn it rejected (the revisions
    it moved) and the turn its worker's stop ends (`stopping`: its end is written later)."""
    for action in actions:
        if isinstance(action, q.FailTurn):
            revision = _turn_revision(conn, action.turn_id)
            draft.targets.append(ReceiptTarget("turn", action.turn_id, "rejected",
                                               revision - 1, revision))  # fmt: skip
    if active is not None:
        draft.targets.append(
            ReceiptTarget("turn", active, "stopping", _turn_revision(conn, active))
        )


def _turn_revision(conn: sqlite3.Connection, turn_id: str) -> int:
    return int(conn.execute("SELECT revision FROM turns WHERE turn_id = ?",
                            (turn_id,)).fetchone()[0])  # fmt: skip
