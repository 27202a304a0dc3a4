"""A running turn's worker events: buffered `started` and message text, its end, its
wall-time limit.

Item text is buffered: the running turn's `started` and its message text are written at most
`FLUSH_MS` (25 ms) after they arrive, and at the turn's end together with the next turn's dispatch,
one transaction for both. Live `item.started`/`item.delta` records go to the observation
sink as they arrive (never stored per delta).
"""

from __future__ import annotations

import logging
import sqlite3

import attrs

from maia.core import MaiaError, new_id
from supervision.workers import TurnEvent as WorkerEvent

from . import _queue as q
from ._actor import SessionCore
from ._agent_events import AgentEvents
from ._approvals import withdraw_pending
from ._attempt import TurnBuffer
from ._capacity import Capacity
from ._core import turn_end_event
from ._driver import _FINAL, WorkerDriver
from ._failures import worker_failure_reason
from ._items import OpenItem, flush_item
from ._launcher import worker_call
from ._lifecycles import SessionEvent
from ._messages import Flush, Progress, WallTime
from ._spill import bound_text
from ._store import Draft, end_turn, session_step
from ._write_retry import END_RETRIES, WriteRetry

log = logging.getLogger("maia.session")

_AGENT_KINDS = ("conversation", "item.started", "item.delta", "item.completed", "tool-call")


@attrs.frozen
class _Ending:
    """A turn's end as decided from its worker's event: written, or kept until it is."""

    turn_id: str
    outcome: str
    reason: str
    error: OpenItem | None


class TurnProgress:
    """The running turn's worker events, its buffered rows' flush, its end and its wall time."""

    def __init__(self, core: SessionCore, capacity: Capacity, driver: WorkerDriver,
                 agent: AgentEvents, buffer: TurnBuffer) -> None:  # fmt: skip
        self.core = core
        self.capacity = capacity
        self.driver = driver
        self.agent = agent
        self.buffer = buffer
        self.pending_end: _Ending | None = None  # its commit was refused: retried on Flush
        self.end_retry = WriteRetry(core, "a turn's end")

    async def wall_time(self, message: WallTime) -> None:
        """Interrupt a turn past its wall time (bounded: the handle escalates to a stop)."""
        attempt, worker = self.core.attempt, self.core.attempt.handle
        if worker is None or self.core.queue.active != message.turn_id or attempt.timed_out:
            return
        attempt.timed_out = message.turn_id
        turn_id = message.turn_id
        self.core.effect("interrupt", worker_call("interrupt", lambda: worker.interrupt(turn_id)))

    async def progress(self, message: Progress) -> None:
        """Apply the message's events in order (the pump adds no more once it is closed).
        When they end the running turn, its end's commit writes what came before it, so
        they arm no delayed flush (whose `Flush` found nothing left once it came: a task
        and a mailbox message per turn)."""
        active = self.core.queue.active
        ends = any(e.kind in _FINAL and e.turn_id == active for e in message.events)
        for event in message.events:
            await self._progress_one(message.attempt_id, event, arm=not ends)

    async def _progress_one(self, attempt_id: str, event: WorkerEvent, *,
                            arm: bool = True) -> None:  # fmt: skip
        handle = self.core.attempt.handle
        if handle is None or handle.attempt_id != attempt_id:
            return
        if event.turn_id != self.core.queue.active:
            return
        match event.kind:
            case "started":
                self.buffer.started = event.turn_id
            case "delta" | "message" if self.buffer.item is None and not self.buffer.place_left():
                self.agent.past_item_limit(event.turn_id)  # no place for the turn's message
                return
            case "delta":
                item = self.buffer.open_item(event.turn_id)
                # past 262,144 characters the text goes to a file
                bound_text(item, event.text or "", self.core.ctx.store.path)
                self.buffer.live("item.delta", item, event.text or "")
            case "message":
                item = self.buffer.open_item(event.turn_id)
                if event.text is not None and item.spill is None:
                    item.text = event.text
                item.completed = True
            case kind if kind in _AGENT_KINDS:
                await self.agent.agent_event(handle, event)
                return
            case "lost":
                # unusable: its end arrives later as an old attempt
                self.core.attempt.handle = None
                self.core.effect("stop", worker_call("stop", lambda: handle.stop("lost")))
                await self.driver.worker_gone(None, event.text or "lost")
                return
            case kind if kind in _FINAL:
                await self._end(event)
                return
        if arm:
            self._arm()

    def _arm(self) -> None:
        """Arm the delayed flush of the buffered rows, unless it is armed."""
        if self.buffer.flush_at is None:
            timer = self.core.ctx.flush_timer
            self.buffer.flush_at = timer.arm(self._flush_pending, self._tell_flush)

    def _flush_pending(self) -> bool:
        """Asked by the flush timer when this Session's entry falls due: is anything still
        unwritten? If not (the turn's end wrote it), the gate reopens without a message."""
        if not self.buffer.pending():
            self.buffer.flush_at = None
            return False
        return True

    async def _tell_flush(self) -> None:
        await self.core.tell_self(Flush())

    async def flush(self) -> None:
        self.buffer.flush_at = None
        if await self.driver.retry_gone():
            return
        pending = self.pending_end
        if pending is not None:
            self.pending_end = None
            if pending.turn_id == self.core.queue.active:  # else its worker went meanwhile
                await self._write_end(pending)
            return
        if not self.buffer.pending():
            return
        await self.core.commit(self.buffer.flush_rows, replayable=True)
        self.core.notify(self.core.queue.active or "")

    async def _end(self, event: WorkerEvent) -> None:
        outcome = _FINAL[event.kind]
        turn_id = event.turn_id
        reason = worker_failure_reason(event.data) if outcome == "failed" else "turn_failed"
        attempt = self.core.attempt
        if attempt.timed_out == turn_id and outcome != "completed":
            outcome, reason = "failed", "wall_time_exceeded"
        attempt.timed_out = None
        if attempt.over_limit is not None and attempt.over_limit[0] == turn_id:  # past a limit
            _, reason, text = attempt.over_limit
            outcome, event = "failed", WorkerEvent(turn_id, "failed", text)
        attempt.over_limit = None
        if outcome == "completed" and event.text is not None:
            item = self.buffer.open_item(turn_id)
            if item.spill is None:  # a spilled item keeps its streamed text
                item.text = event.text
            item.completed = True
        elif self.buffer.item is not None:
            self.buffer.item.completed = True
        if outcome == "failed" and event.text and self.buffer.place_left(final=True):
            seq = self.buffer.next_seq()
            error = OpenItem(new_id("item"), turn_id, seq, "error", event.text, True)
        else:
            error = None
        await self._write_end(_Ending(turn_id, outcome, reason, error))

    async def _write_end(self, ending: _Ending) -> None:
        """Commit the turn's end with the next turn's dispatch; a refused commit keeps it
        pending (`_write_retry`), and past `END_RETRIES` fails the worker."""
        turn_id, outcome, error = ending.turn_id, ending.outcome, ending.error
        reason = ending.reason
        after, actions = self.capacity.step(q.TurnEnded(turn_id), self.core.now())
        # Only this incarnation's worker asked for the turn's approvals (an earlier one's
        # were withdrawn when it resumed): none pending in memory, no query.
        asked = any(turn == turn_id for turn, _ in self.core.approvals.values())

        def body(conn: sqlite3.Connection, draft: Draft) -> None:
            self.buffer.flush_rows(conn, draft, ending=turn_id)
            if error is not None:
                flush_item(conn, draft, error)
            withdrawn = (
                withdraw_pending(conn, draft, f"the turn ended {outcome}", turn_id) if asked else []
            )
            end_turn(conn, draft, turn_id, outcome, reason if outcome == "failed" else None)
            # interrupted, or ended without an answer (the worker gave up on its approval)
            event = turn_end_event(draft.state, outcome)
            if event is not None:
                body = {"approvals": withdrawn} if event is SessionEvent.APPROVAL_WITHDRAWN else {}
                session_step(conn, draft, event, caller="worker", payload=body)
            self.core.apply_rows(conn, draft, after, actions)

        try:
            await self.core.commit(body, replayable=True)
        except MaiaError as refused:  # a full disk, say: the end must not be dropped
            await self._end_refused(ending, refused)
            return
        self.end_retry.succeeded()
        self.core.approvals.clear()
        self.buffer.item = None
        self.core.queue = after
        self.driver.after_commit(actions)
        self.core.notify(turn_id)

    async def _end_refused(self, ending: _Ending, refused: MaiaError) -> None:
        if self.end_retry.failures + 1 < END_RETRIES:
            self.pending_end = ending
            self.end_retry.failed(refused)
            return
        # Past the bound: fail the worker the existing way (as a lost one), so the Session
        # does not wait on this turn for good; that write is retried in its turn.
        log.error("session %s: the end of turn %s could not be written %d times: failing its"
                  " worker", self.core.session_id, ending.turn_id, END_RETRIES)  # fmt: skip
        self.end_retry.failures = 0
        handle = self.core.attempt.handle
        self.core.attempt.handle = None
        if handle is not None:
            self.core.effect("stop", worker_call("stop", lambda: handle.stop("end_unwritten")))
        await self.driver.worker_gone(None, f"the turn's end could not be written: {refused}")
