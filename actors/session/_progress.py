"""A running turn's worker events: buffered `started` and message text, its end, its
wall-time limit.

Item text is buffered: the running turn's `started` and its message text are written at most
`FLUSH_MS` (25 ms) after they arrive, and at the turn's end together with the next turn's dispatch,
one transaction for both. Live `item.started`/`item.delta` records go to the observation
sink as they arrive (never stored per delta).
"""

from __future__ import annotations

import sqlite3

from maia.core import new_id
from supervision.workers import TurnEvent as WorkerEvent

from . import _queue as q
from ._agent_events import AgentEvents
from ._approvals import withdraw_pending
from ._core import turn_end_event
from ._lifecycles import SessionEvent
from ._messages import Flush, Progress, WallTime
from ._spill import bound_text
from ._store import Draft, OpenItem, end_turn, flush_item, session_step
from ._worker_ops import _FINAL, _worker_call

_AGENT_KINDS = ("conversation", "item.started", "item.delta", "item.completed", "tool-call")


class TurnProgress(AgentEvents):
    async def wall_time(self, message: WallTime) -> None:
        """Interrupt a turn past its wall time (bounded: the handle escalates to a stop)."""
        worker = self.worker
        if worker is None or self.core.active != message.turn_id or self.timed_out:
            return
        self.timed_out = message.turn_id
        turn_id = message.turn_id
        self.effect("interrupt", _worker_call("interrupt", lambda: worker.interrupt(turn_id)))

    async def progress(self, message: Progress) -> None:
        """Apply the message's events in order (the pump adds no more once it is closed)."""
        for event in message.events:
            await self._progress_one(message.attempt_id, event)

    async def _progress_one(self, attempt_id: str, event: WorkerEvent) -> None:
        handle = self.worker
        if handle is None or handle.attempt_id != attempt_id:
            return
        if event.turn_id != self.core.active:
            return
        match event.kind:
            case "started":
                self.started = event.turn_id
            case "delta":
                item = self._item(event.turn_id)
                bound_text(item, event.text or "", self.ctx.store.path)  # past 262,144: a file
                self._live("item.delta", item, event.text or "")
            case "message":
                item = self._item(event.turn_id)
                if event.text is not None and item.spill is None:
                    item.text = event.text
                item.completed = True
            case kind if kind in _AGENT_KINDS:
                await self.agent_event(handle, event)
                return
            case "lost":
                self.worker = None  # unusable: its end arrives later as an old attempt
                self.effect("stop", _worker_call("stop", lambda: handle.stop("lost")))
                await self._worker_gone(None, event.text or "lost")
                return
            case kind if kind in _FINAL:
                await self._end(event)
                return
        if self.flush_at is None:
            self.flush_at = self.ctx.flush_timer.arm(self._flush_pending, self._tell_flush)

    def _flush_pending(self) -> bool:
        """Asked by the flush timer when this Session's entry falls due: is anything still
        unwritten? If not (the turn's end wrote it), the gate reopens without a message."""
        if self.started is None and (self.item is None or self._item_clean(self.item)):
            self.flush_at = None
            return False
        return True

    async def _tell_flush(self) -> None:
        await self._tell(Flush())

    async def flush(self) -> None:
        self.flush_at = None
        if self.started is None and (self.item is None or self._item_clean(self.item)):
            return
        await self.commit(self._flush_rows)
        self.notify(self.core.active or "")

    async def _end(self, event: WorkerEvent) -> None:
        outcome = _FINAL[event.kind]
        turn_id = event.turn_id
        reason = "turn_failed"
        if self.timed_out == turn_id and outcome != "completed":
            outcome, reason = "failed", "wall_time_exceeded"
        self.timed_out = None
        if self.over_limit is not None and self.over_limit[0] == turn_id:  # past a token limit
            _, reason, text = self.over_limit
            outcome, event = "failed", WorkerEvent(turn_id, "failed", text)
        self.over_limit = None
        if outcome == "completed" and event.text is not None:
            item = self._item(turn_id)
            if item.spill is None:  # a spilled item keeps its streamed text
                item.text = event.text
            item.completed = True
        elif self.item is not None:
            self.item.completed = True
        if outcome == "failed" and event.text:
            self.item_seq += 1
            error = OpenItem(new_id("item"), turn_id, self.item_seq, "error", event.text, True)
        else:
            error = None
        after, actions = self.step(q.TurnEnded(turn_id), self.now())

        def body(conn: sqlite3.Connection, draft: Draft) -> None:
            self._flush_rows(conn, draft)
            if error is not None:
                flush_item(conn, draft, error)
            withdrawn = withdraw_pending(conn, draft, f"the turn ended {outcome}", turn_id)
            end_turn(conn, draft, turn_id, outcome, reason if outcome == "failed" else None)
            # interrupted, or ended without an answer (the worker gave up on its approval)
            event = turn_end_event(draft.state, outcome)
            if event is not None:
                body = {"approvals": withdrawn} if event is SessionEvent.APPROVAL_WITHDRAWN else {}
                session_step(conn, draft, event, caller="worker", payload=body)
            self.apply_rows(conn, draft, after, actions)

        await self.commit(body)
        self.approvals.clear()
        self.item = None
        self.core = after
        self.after_commit(actions)
        self.notify(turn_id)
