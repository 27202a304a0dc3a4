"""Sends that wait together go in one transaction.

Sends queued in a Session's mailbox would each pay a commit while the running turn's events
wait behind them. The actor takes its queued messages together (the runtime's batch
handling), and applies a run of consecutive `turn.send`s in one transaction, each in its
own savepoint with its own idempotency key and receipt (a refused or conflicting send rolls
back alone). Send order is mailbox order.
"""

from __future__ import annotations

import sqlite3
from typing import Any

import outcome

from maia.core import MaiaError, to_json
from storage import Applied, MutationKey, MutationResult, run_mutation

from . import _queue as q
from ._actor import SessionCore, new_turn_id, saturated
from ._capacity import Capacity
from ._driver import WorkerDriver
from ._failures import closed_refusal
from ._lifecycles import TurnState
from ._messages import Reclaim, SendTurn
from ._store import Draft, insert_turn
from ._usage_limits import check_daily_budget
from ._views import new_turn_view, turn_view


class _Refused(Exception):
    """A lone send's refusal, raised out of its transaction so that nothing it wrote stays."""

    def __init__(self, error: MaiaError) -> None:
        super().__init__(error)
        self.error = error


class SendBatch:
    """A run of `turn.send`s, applied in one transaction."""

    def __init__(self, core: SessionCore, capacity: Capacity, driver: WorkerDriver) -> None:
        self.core = core
        self.capacity = capacity
        self.driver = driver

    async def send_batch(self, items: list[SendTurn]) -> list[outcome.Outcome[MutationResult]]:
        """Apply every send of `items` in one transaction; each one's answer, in order.
        Raises what the transaction raised (then no send was applied)."""
        now = self.core.now()
        start = self.core.queue.worker is q.Worker.NONE and not self.core.queue.closed
        took = (
            start and not self.capacity.holds_slot and self.capacity.need_slot((q.StartWorker(),))
        )
        slot = self.capacity.holds_slot
        may = self.capacity.may_dispatch()  # an activation for a send that dispatches at once
        answers: list[outcome.Outcome[MutationResult]] = []
        final = {"core": self.core.queue, "actions": ()}

        def body(conn: sqlite3.Connection, draft: Draft) -> None:
            # A replay (a sibling request failed: see docs/storage.md) starts over.
            answers.clear()
            core: q.QueueState = self.core.queue
            actions: list[q.QueueAction] = []
            if len(items) == 1:
                # A send alone needs no savepoint (which copies every page it touches to the
                # sub-journal): refused, it raises out of the transaction's body, whose own
                # rollback undoes what it wrote, and that refusal is its answer.
                try:
                    result, core, more = self._one(conn, draft, items[0], core, now, slot, may)
                except MaiaError as error:
                    raise _Refused(error) from error
                answers.append(outcome.Value(result))
                final["core"], final["actions"] = core, tuple(more)
                return
            for item in items:
                saved = draft.snapshot()
                conn.execute("SAVEPOINT send")
                try:
                    result, core, more = self._one(conn, draft, item, core, now, slot, may)
                except MaiaError as error:
                    conn.execute("ROLLBACK TO send")
                    conn.execute("RELEASE send")
                    draft.restore(saved)
                    answers.append(outcome.Error(error))
                    continue
                conn.execute("RELEASE send")
                actions += more
                answers.append(outcome.Value(result))
            final["core"], final["actions"] = core, tuple(actions)

        try:
            await self.core.commit(body, replayable=True)
        except _Refused as refused:  # a send alone, refused: nothing was written
            answers[:] = [outcome.Error(refused.error)]
            final["core"], final["actions"] = self.core.queue, ()
        except BaseException:
            if took:
                self.capacity.release_slot()
            self.capacity.settle_activation()
            raise
        self.core.queue = final["core"]  # type: ignore[assignment]
        actions: tuple[q.QueueAction, ...] = final["actions"]  # type: ignore[assignment]
        if took and not any(isinstance(a, q.StartWorker) for a in actions):
            self.capacity.release_slot()
        self.driver.after_commit(actions)
        self.core.notify(*(a.value.result["turn"]["turnId"] for a in answers
                      if isinstance(a, outcome.Value)))  # fmt: skip
        if any(isinstance(a, outcome.Error) and getattr(a.error, "code", "") == "saturated"
               for a in answers):  # fmt: skip
            victim = self.core.ctx.slots.victim(self.core.session_id)
            if victim is not None:  # free a slot for the retry: the longest idle worker goes
                self.core.tell_other(victim, Reclaim())
        return answers

    def _one(self, conn: sqlite3.Connection, draft: Draft, message: SendTurn,
             core: q.QueueState, now: int, slot: bool, may: bool) -> Any:  # fmt: skip
        """One send inside the batch's transaction: (result, core after, actions)."""
        turn_id = new_turn_id()
        command = message.command
        step: dict[str, Any] = {"core": core, "actions": ()}

        def apply(c: sqlite3.Connection) -> Applied:
            if core.closed:  # name the real state and what to do next
                raise closed_refusal(c, draft)
            # raises the queue's refusals
            after, actions = q.step(core, q.Send(turn_id), now, may_dispatch=may)
            if any(isinstance(a, q.StartWorker) for a in actions) and not slot:
                raise saturated(self.core.ctx.slots.refused)  # (this runs in the writer thread)
            check_daily_budget(c, self.core.config.limits, now)  # refused before it is queued
            first_event, first_target = len(draft.event_ids), len(draft.targets)
            insert_turn(c, draft, turn_id, message.text)
            self.core.apply_rows(c, draft, after, actions)
            step["core"], step["actions"] = after, actions
            memo = draft.memo(turn_id)
            if memo is not None and memo.state in (TurnState.QUEUED, TurnState.DISPATCHING):
                # what turn_view would read back: built from this write's own values
                view = new_turn_view(turn_id, draft.session_id, memo.state.value, memo.revision,
                                     draft.now, message.text)  # fmt: skip
                memo.view = view  # its dispatch's and end's views follow from it (`turn_step`)
            else:
                view = turn_view(c, turn_id)
            draft.views[turn_id] = view
            result = {"turn": to_json(view), "position": after.position(turn_id)}
            return Applied(
                result,
                targets=tuple(draft.targets[first_target:]),
                event_ids=tuple(draft.event_ids[first_event:]),
                project_id=draft.project_id,
            )

        key = MutationKey(command.actor_id, "turn.send", command.command_id)
        try:
            result = run_mutation(conn, key=key, input_digest=command.digest, now_ms=draft.now,
                                  apply=apply, correlation_id=command.correlation_id)  # fmt: skip
        except MaiaError as error:
            error.details.setdefault("sessionId", self.core.session_id)
            raise
        return result, step["core"], step["actions"]
