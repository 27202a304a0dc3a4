"""Sends that wait together go in one transaction.

A Session's actor handles one message at a time, so sends queued in its mailbox would each
pay a commit while the running turn's events wait behind them. Instead, concurrent
`turn.send`s for one Session join a `SendBatch`: the first caller carries it to the actor,
later callers add themselves while it waits, and the actor applies them all in one
transaction, each in its own savepoint with its own idempotency key and receipt (a refused
or conflicting send rolls back alone). Send order is the order callers joined.
"""

from __future__ import annotations

import sqlite3
from typing import Any

import outcome

from maia.protocol import MaiaError, to_json
from storage import Applied, MutationKey, MutationResult, ReceiptTarget, run_mutation

from . import _queue as q
from ._actor import new_turn_id, saturated
from ._client_ops import ClientOps, insert_turn
from ._messages import Reclaim, SendBatch, SendTurn
from ._store import Draft
from ._views import turn_view


class SendOps(ClientOps):
    async def send_batch(self, batch: SendBatch) -> None:
        """Apply every send of `batch` in one transaction and settle each caller."""
        batch.closed = True
        items = list(batch.items)
        now = self.now()
        start = self.core.worker is q.Worker.NONE and not self.core.closed
        took = start and not self.holds_slot and self.need_slot((q.StartWorker(),))
        slot = self.holds_slot
        answers: list[outcome.Outcome[MutationResult]] = []
        final = {"core": self.core, "actions": ()}

        def body(conn: sqlite3.Connection, draft: Draft) -> None:
            core: q.QueueState = self.core
            actions: list[q.QueueAction] = []
            for item in items:
                saved = draft.snapshot()
                conn.execute("SAVEPOINT send")
                try:
                    result, core, more = self._one(conn, draft, item.message, core, now, slot)
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
            await self.commit(body)
        except BaseException as error:
            if took:
                self.holds_slot = False
                self.ctx.slots.release()
            batch.fail(error if isinstance(error, MaiaError) else _unavailable())
            raise
        self.core = final["core"]  # type: ignore[assignment]
        actions: tuple[q.QueueAction, ...] = final["actions"]  # type: ignore[assignment]
        if took and not any(isinstance(a, q.StartWorker) for a in actions):
            self.holds_slot = False
            self.ctx.slots.release()
        self.after_commit(actions)
        self.notify(*(a.value.result["turn"]["turnId"] for a in answers
                      if isinstance(a, outcome.Value)))  # fmt: skip
        if any(isinstance(a, outcome.Error) and getattr(a.error, "code", "") == "saturated"
               for a in answers):  # fmt: skip
            victim = self.ctx.slots.victim(self.session_id)
            if victim is not None:  # free a slot for the retry: the longest idle worker goes
                self.ctx.nursery.start_soon(self.tell_quietly, victim, Reclaim())
        for item, answer in zip(items, answers, strict=True):
            item.settle(answer)

    def _one(self, conn: sqlite3.Connection, draft: Draft, message: SendTurn,
             core: q.QueueState, now: int, slot: bool) -> Any:  # fmt: skip
        """One send inside the batch's transaction: (result, core after, actions)."""
        turn_id = new_turn_id()
        command = message.command
        step: dict[str, Any] = {"core": core, "actions": ()}

        def apply(c: sqlite3.Connection) -> Applied:
            after, actions = q.step(core, q.Send(turn_id), now)  # raises the queue's refusals
            if any(isinstance(a, q.StartWorker) for a in actions) and not slot:
                raise saturated(self.ctx.slots.limit)  # (this runs in the writer thread)
            first_event, first_target = len(draft.event_ids), len(draft.targets)
            insert_turn(c, draft, turn_id, message.text)
            draft.targets.append(ReceiptTarget("turn", turn_id, "created", None, 1))
            self.apply_rows(c, draft, after, actions)
            step["core"], step["actions"] = after, actions
            view = draft.views[turn_id] = turn_view(c, turn_id)
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
                                  apply=apply)  # fmt: skip
        except MaiaError as error:
            error.details.setdefault("sessionId", self.session_id)
            raise
        return result, step["core"], step["actions"]


def _unavailable() -> MaiaError:
    return MaiaError("unavailable", "the Session's actor failed", {"target": "session"})
