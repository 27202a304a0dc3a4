"""A Session coming back: turns lost with an earlier incarnation, and queued turns left
without a worker.

A Session found with a dispatched turn but no worker of this actor (the Node restarted, or
the actor crashed) fails that turn `runtime_lost` on `Resume`, never re-running it, and
starts a worker for the turns still queued. With no live-Session slot free the turns stay
queued: the longest idle worker elsewhere is asked to make room, and a durable timer tries
again (a fallback: a freed slot is handed on at once).
"""

from __future__ import annotations

import sqlite3

import attrs

from actors._timers import Wake

from . import _queue as q
from ._actor import SessionCore
from ._approvals import withdraw_pending
from ._capacity import Capacity
from ._driver import WorkerDriver
from ._lifecycles import SessionEvent, SessionState
from ._messages import RESUME_RETRY, Reclaim
from ._store import Draft, session_step

RESUME_RETRY_MS = 5_000  # a fallback: a freed slot is handed on at once
HAD_WORKER = (
    SessionState.STARTING,
    SessionState.RUNNING,
    SessionState.WAITING_APPROVAL,
    SessionState.INTERRUPTED,
)


class Resumption:
    """Fails the turns an earlier incarnation lost and gets a worker for stranded ones."""

    def __init__(self, core: SessionCore, capacity: Capacity, driver: WorkerDriver,
                 lost: tuple[str, ...]) -> None:  # fmt: skip
        self.core = core
        self.capacity = capacity
        self.driver = driver
        self.lost = lost  # turns dispatched or running when the earlier incarnation went
        self.scheduled = False  # a fallback Resume (durable timer) is on its way

    def due(self) -> bool:
        """Whether the Session must resume before anything else happens to it."""
        queue = self.core.queue
        stranded = queue.queued and queue.worker is q.Worker.NONE and not queue.closed
        return bool(self.lost or stranded)

    async def resume(self) -> None:
        """Fail turns lost with an earlier runtime; start a worker for the queued ones."""
        core, queue = self.core, self.core.queue
        if (queue.worker is not q.Worker.NONE or queue.closed) and not self.lost:
            return
        after, actions = q.recover(
            queue.queued, self.lost, limit=queue.limit, idle_ms=queue.idle_ms, now=core.now()
        )
        after = attrs.evolve(after, closed=queue.closed)
        if queue.closed:
            actions = tuple(a for a in actions if not isinstance(a, q.StartWorker))
            after = attrs.evolve(after, worker=q.Worker.NONE)
        retry = False
        if not self.capacity.need_slot(actions):  # at capacity: keep them queued, try again
            actions = tuple(a for a in actions if not isinstance(a, q.StartWorker))
            after = attrs.evolve(after, worker=q.Worker.NONE)
            retry = True
        lost = self.lost
        if retry:
            await self._wait_for_slot()
        memory = core.memory
        warm = memory.state is SessionState.IDLE and memory.activity != "stopped"
        if not (lost or actions or warm
                or memory.state in (*HAD_WORKER, SessionState.RECOVERING)):  # fmt: skip
            core.queue = after
            return  # nothing to record: the turns wait for a slot

        def body(conn: sqlite3.Connection, draft: Draft) -> None:
            # A worker of an earlier incarnation is gone: its approvals can never be answered.
            withdraw_pending(conn, draft, "the worker is gone: the Node or its actor restarted")
            if draft.state in HAD_WORKER:
                session_step(conn, draft, SessionEvent.NODE_RESTARTED)
            core.apply_rows(conn, draft, after, actions)
            if draft.state is SessionState.RECOVERING and not any(
                isinstance(a, q.StartWorker) for a in actions
            ):
                session_step(conn, draft, SessionEvent.RECOVERED)

        await core.commit(body)
        self.lost = ()
        core.queue = after
        self.driver.after_commit(actions)
        core.notify(*lost)

    async def _wait_for_slot(self) -> None:
        core = self.core
        core.ctx.slots.wait_for_slot(core.session_id)
        victim = core.ctx.slots.victim(core.session_id)
        if victim is not None:  # the longest idle worker makes room
            core.tell_other(victim, Reclaim())
        if not self.scheduled:  # a durable timer, told back as Resume
            retry_later = Wake(RESUME_RETRY, after_ms=RESUME_RETRY_MS)
            await core.path.transact(lambda tx: tx.wake(retry_later))
            self.scheduled = True
