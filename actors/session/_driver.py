"""The worker side of a Session actor: carrying out the queue's side effects (launch,
prompt, interrupt, stop) and turning a worker's start and end into the Session's rows
(`_launcher` runs the effects that own a worker, `_progress` the running turn's events).

Side effects run in the actor's effect scope (`actors._effects`), after the commit.
"""

from __future__ import annotations

import functools
import logging
import sqlite3

from maia.core import MaiaError

from . import _lazy_wakes as lazy_wakes
from . import _queue as q
from ._actor import SessionCore
from ._approvals import withdraw_pending
from ._attempt import TurnBuffer
from ._capacity import Capacity
from ._core import gone_reasons
from ._failures import record_failure
from ._items import flush_item
from ._launch import end_attempt, record_attempt
from ._launcher import WorkerLauncher, worker_call
from ._lifecycles import SessionEvent
from ._messages import (
    WorkerExited,
    WorkerInitialized,
    WorkerSpawned,
)
from ._store import Draft, session_step, wake_now
from ._write_retry import WriteRetry

log = logging.getLogger("maia.session")
_FINAL = {"completed": "completed", "failed": "failed", "interrupted": "interrupted"}


class WorkerDriver:
    """Launches the Session's worker attempts, feeds them its turns, carries out the
    queue's side effects and turns a worker's start and end into the Session's rows."""

    def __init__(self, core: SessionCore, capacity: Capacity, buffer: TurnBuffer) -> None:
        self.core = core
        self.capacity = capacity
        self.attempt = core.attempt
        self.buffer = buffer
        self.launcher = WorkerLauncher(core, capacity)
        # the rows of a worker that went, refused by storage: (attempt, reason, stderr,
        # launch failed), written again on the next Flush (`_write_retry`)
        self.pending_gone: tuple[str | None, str, str, bool] | None = None
        self.gone_retry = WriteRetry(core, "a gone worker's rows")

    # -- side effects ---------------------------------------------------------------------

    def after_commit(self, actions: tuple[q.QueueAction, ...]) -> None:
        for action in actions:
            match action:
                case q.StartWorker():
                    self.core.effect("launch", self.launcher.launch)
                case q.Dispatch(turn_id):
                    handle = self.attempt.handle
                    memo = self.core.memory.turns.get(turn_id)
                    if handle is not None and memo is not None:
                        self.buffer.reset()
                        self.core.effect("pump", self.launcher.pumping(handle, turn_id, memo.text))
                case q.SendInterrupt(turn_id) if self.attempt.handle is not None:
                    interrupt = functools.partial(self.attempt.handle.interrupt, turn_id)
                    self.core.effect("interrupt", worker_call("interrupt", interrupt))
                case q.StopWorker(reason) if self.attempt.handle is not None:
                    stop = functools.partial(self.attempt.handle.stop, reason)
                    self.core.effect("stop", worker_call("stop", stop))
        idle = self.core.queue.worker is q.Worker.READY and self.core.queue.idle_since is not None
        self.core.ctx.slots.mark_idle(self.core.session_id, idle)
        self.capacity.settle_activation()

    def abandon(self, turn_id: str) -> bool:
        """Fence the worker if it has not taken dispatched turn `turn_id`, so it never
        starts it (its stop begins at once); False if it took it or cannot be fenced now.
        A worker on an Execution Node is fenced here at once and there by a frame, sent
        from the effect scope (`RemoteWorkerHandle.send_abandon`)."""
        handle = self.attempt.handle
        abandon = getattr(handle, "abandon", None)
        reason = f"turn {turn_id} was interrupted before the worker took it"
        if abandon is None or not abandon(turn_id, reason):
            return False
        send_abandon = getattr(handle, "send_abandon", None)
        if send_abandon is not None:
            self.core.effect("abandon", worker_call("abandon", send_abandon))
        return True

    async def activation_free(self) -> None:
        """An activation may be ours now: dispatch the next turn if one waits."""
        after, actions = self.capacity.step(q.Wake(), self.core.now())
        if after == self.core.queue and not actions:
            self.capacity.settle_activation()
            return
        await self.core.commit(
            lambda conn, draft: self.core.apply_rows(conn, draft, after, actions)
        )
        self.core.queue = after
        self.after_commit(actions)
        self.core.notify(*(a.turn_id for a in actions if isinstance(a, q.Dispatch)))

    async def reclaim(self) -> None:
        """Release an idle worker at once (its slot is wanted elsewhere)."""
        since = self.core.queue.idle_since
        if since is not None:
            await self.tick(now=since + self.core.queue.idle_ms)

    # -- messages from helpers ------------------------------------------------------------

    async def worker_spawned(self, message: WorkerSpawned) -> None:
        handle = message.handle
        node_epoch = self.core.ctx.store.node_epoch

        def body(conn: sqlite3.Connection, draft: Draft) -> None:
            record_attempt(conn, attempt_id=handle.attempt_id, session_id=draft.session_id,
                           epoch=handle.epoch, node_epoch=node_epoch, pid=handle.pid,
                           now=draft.now)  # fmt: skip

        await self.core.commit(body)
        wanted = self.core.queue.worker in (q.Worker.STARTING, q.Worker.STOPPING)
        if wanted and self.attempt.handle is None:
            self.attempt.handle = handle  # its exit is the one the queue waits for
        if not wanted or self.core.queue.worker is q.Worker.STOPPING:
            # Stopped while it started (or a launch nobody waits for): stop it now.
            self.core.effect("stop", worker_call("stop", lambda: handle.stop("not wanted")))

    async def worker_initialized(self, message: WorkerInitialized) -> None:
        if self.attempt.handle is None or self.attempt.handle.attempt_id != message.attempt_id:
            return
        after, actions = self.capacity.step(q.WorkerReady(), self.core.now())
        if after == self.core.queue:
            return

        def body(conn: sqlite3.Connection, draft: Draft) -> None:
            session_step(conn, draft, SessionEvent.WORKER_READY, caller="worker")
            record_failure(conn, draft, None)  # it came up: the last failure is behind it
            self.core.apply_rows(conn, draft, after, actions)

        await self.core.commit(body)
        self.core.queue = after
        self.after_commit(actions)
        self.core.notify()

    async def worker_exited(self, message: WorkerExited) -> None:
        current = message.attempt_id is None or (
            self.attempt.handle is not None and self.attempt.handle.attempt_id == message.attempt_id
        )
        if not current:
            if message.attempt_id is not None:
                attempt = message.attempt_id
                await self.core.commit(lambda c, d: end_attempt(c, attempt, message.reason, d.now))
            return
        await self.worker_gone(message.attempt_id, message.reason, message.stderr_tail,
                                launch_failed=message.attempt_id is None)  # fmt: skip

    async def worker_gone(self, attempt_id: str | None, reason: str, stderr: str = "", *,
                           launch_failed: bool = False) -> None:  # fmt: skip
        expected = self.core.queue.worker is q.Worker.STOPPING
        gone = q.WorkerGone(expected=expected, launch_failed=launch_failed)
        after, actions = q.step(self.core.queue, gone, self.core.now())
        timed_out = self.attempt.timed_out
        actions = gone_reasons(actions, timed_out=timed_out, exit_reason=reason)
        self.attempt.timed_out = None
        self.capacity.need_slot(actions)  # the slot of the worker that went is still held

        errors = self.buffer.failure_items(actions, reason, stderr)

        def body(conn: sqlite3.Connection, draft: Draft) -> None:
            if attempt_id is not None:
                end_attempt(conn, attempt_id, reason, draft.now)
            withdraw_pending(conn, draft, f"the worker is gone: {reason}")
            self.buffer.flush_rows(conn, draft)
            for error in errors:  # the turn's failureMessage: why the worker went
                if error.turn_id in draft.turns:
                    flush_item(conn, draft, error)
            self.core.gone_rows(conn, draft, expected, actions, launch_failed=launch_failed)
            if launch_failed or draft.state.value == "failed":  # say why on the Session
                record_failure(conn, draft, reason)
            self.core.apply_rows(conn, draft, after, actions)
            for cancel in lazy_wakes.worker_gone(draft):  # the rows left to fire as no-ops
                wake_now(draft, cancel)

        try:
            await self.core.commit(body)
        except MaiaError as refused:  # a full disk, say: the worker is gone all the same
            self.attempt.timed_out = timed_out
            self.pending_gone = (attempt_id, reason, stderr, launch_failed)
            self.gone_retry.failed(refused)
            return
        self.pending_gone = None
        self.gone_retry.succeeded()
        self.core.approvals.clear()
        self.attempt.handle = None
        self.buffer.item, self.buffer.started = None, None
        self.core.queue = after
        self.after_commit(actions)
        self.capacity.settle_slot()
        self.core.notify(*(a.turn_id for a in actions if isinstance(a, q.FailTurn)))

    async def retry_gone(self) -> bool:
        """Write a gone worker's refused rows again (its `Flush`); whether one was pending."""
        pending, self.pending_gone = self.pending_gone, None
        if pending is None:
            return False
        attempt_id, reason, stderr, launch_failed = pending
        await self.worker_gone(attempt_id, reason, stderr, launch_failed=launch_failed)
        return True

    async def tick(self, *, now: int | None = None) -> None:
        after, actions = q.step(self.core.queue, q.Tick(), self.core.now() if now is None else now)
        if after != self.core.queue:
            self.core.queue = after
            self.after_commit(actions)
