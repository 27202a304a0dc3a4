"""The worker side of a Session actor: launching attempts, feeding prompts, carrying out
the queue's side effects, and reacting to a worker's start and end (`_progress` handles the
events of the running turn).

Side effects run in the actor's effect scope (`actors._effects`) and report back through the
registry (`ctx.tell`), so a message always reaches the Session's live actor. The launch
effect owns the worker for as long as it runs: it keeps the actor from being passivated,
and when the actor stops (crash or close) its cancellation stops the worker and gives the
slot back. A worker call that fails (the worker died meanwhile) is logged, never raised:
its exit reaches the actor as `WorkerExited`.
"""

from __future__ import annotations

import functools
import logging
import os
import sqlite3
from collections.abc import Awaitable, Callable

import trio

from actors._errors import ActorError
from maia.core import MaiaError
from supervision.workers import ExitInfo, WorkerFailed, WorkerHandle
from supervision.workers import TurnEvent as WorkerEvent

from . import _queue as q
from . import _sql as sql
from ._actor import SessionCore
from ._approvals import withdraw_pending
from ._attempt import TurnBuffer
from ._capacity import Capacity
from ._core import gone_reasons
from ._failures import record_failure
from ._launch import AGENT_KINDS, end_attempt, record_attempt, state_dir, worker_spec
from ._lifecycles import SessionEvent
from ._messages import (
    ActivationFree,
    Progress,
    WorkerExited,
    WorkerInitialized,
    WorkerSpawned,
)
from ._store import Draft, flush_item, session_step

log = logging.getLogger("maia.session")
STDERR_TAIL_CHARS = 2048  # of a worker's stderr, kept with a turn it failed


def _stderr_tail(handle: WorkerHandle, info: ExitInfo) -> str:
    """The end of what went to stderr: an exec program's lines (relayed as diagnostics),
    then the worker's own, at most `STDERR_TAIL_CHARS`."""
    diagnostics = getattr(handle, "diagnostics", ())  # a stand-in handle may keep none
    lines = [str(d.get("line", "")) for d in diagnostics if d.get("stream") == "stderr"]
    program = lines[-40:]
    text = "\n".join(filter(None, ["\n".join(program), info.stderr_tail.strip()]))
    return text[-STDERR_TAIL_CHARS:]


_FINAL = {"completed": "completed", "failed": "failed", "interrupted": "interrupted"}


_WORKER_GONE = (MaiaError, WorkerFailed, trio.BrokenResourceError, trio.ClosedResourceError)
STOP_BOUND_S = 30.0  # a worker's bounded stop: interrupt 10 s, terminate 5 s, then kill


def worker_call(name: str, fn: Callable[[], Awaitable[object]]) -> Callable[[], Awaitable[None]]:
    """An effect calling the worker; a failure is logged (its exit tells the actor)."""

    async def call() -> None:
        try:
            await fn()
        except _WORKER_GONE as error:
            log.warning("worker %s failed: %r", name, error)

    return call


class WorkerDriver:
    """Launches the Session's worker attempts, feeds them its turns, carries out the
    queue's side effects and turns a worker's start and end into the Session's rows."""

    def __init__(self, core: SessionCore, capacity: Capacity, buffer: TurnBuffer) -> None:
        self.core = core
        self.capacity = capacity
        self.attempt = core.attempt
        self.buffer = buffer

    # -- side effects ---------------------------------------------------------------------

    def after_commit(self, actions: tuple[q.QueueAction, ...]) -> None:
        for action in actions:
            match action:
                case q.StartWorker():
                    self.core.effect("launch", self._launch)
                case q.Dispatch(turn_id):
                    handle = self.attempt.handle
                    memo = self.core.memory.turns.get(turn_id)
                    if handle is not None and memo is not None:
                        self.buffer.reset()
                        self.core.effect("pump", self._pumping(handle, turn_id, memo.text))
                case q.SendInterrupt(turn_id) if self.attempt.handle is not None:
                    interrupt = functools.partial(self.attempt.handle.interrupt, turn_id)
                    self.core.effect("interrupt", worker_call("interrupt", interrupt))
                case q.StopWorker(reason) if self.attempt.handle is not None:
                    stop = functools.partial(self.attempt.handle.stop, reason)
                    self.core.effect("stop", worker_call("stop", stop))
        idle = self.core.queue.worker is q.Worker.READY and self.core.queue.idle_since is not None
        self.core.ctx.slots.mark_idle(self.core.session_id, idle)
        self.capacity.settle_activation()

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

    async def _tell_to(self, session_id: str, message: object) -> None:
        try:
            await self.core.ctx.tell(session_id, message)
        except (MaiaError, ActorError) as error:
            log.warning("session %s: %s to %s not delivered: %r", self.core.session_id,
                        type(message).__name__, session_id, error)  # fmt: skip

    async def tell(self, message: object) -> None:
        try:
            await self.core.ctx.tell(self.core.session_id, message)
        except (MaiaError, ActorError) as error:  # stopping: the next incarnation recovers
            log.warning("session %s: %s not delivered: %r", self.core.session_id,
                        type(message).__name__, error)  # fmt: skip

    async def reclaim(self) -> None:
        """Release an idle worker at once (its slot is wanted elsewhere)."""
        since = self.core.queue.idle_since
        if since is not None:
            await self.tick(now=since + self.core.queue.idle_ms)

    async def _launch(self) -> None:
        row = await self.core.ctx.store.read(
            lambda conn: sql.launch_row(conn, self.core.session_id)
        )
        try:
            executor = self.core.config.executor(row[0])  # builtin:, user: or this Project's own
            self.attempt.wall_time_ms = executor.wall_time_ms if executor.kind == "exec" else None
            self.attempt.tools = executor.kind in AGENT_KINDS
            output = self.core.config.limits.max_output_bytes_per_tool
            state = state_dir(str(self.core.ctx.store.path), self.core.session_id)
            spec = worker_spec(executor, row[1], self.core.ctx.environ, max_output_bytes=output,
                               session_id=self.core.session_id, state=state,
                               conversation_id=row[2])  # fmt: skip
            handle = await self.core.ctx.workers.start_worker(spec)
        except MaiaError as error:
            await self.tell(WorkerExited(None, f"start failed: {error.message}"))
            return
        except Exception as error:  # a launch bug must fail this Session's start, not the Node
            log.exception("session %s: worker launch failed", self.core.session_id)
            await self.tell(WorkerExited(None, f"start failed: {error!r}"[:200]))
            return
        try:
            await self.tell(WorkerSpawned(handle))
            try:
                await handle.wait_initialized()
                await self.tell(WorkerInitialized(handle.attempt_id))
            except WorkerFailed as error:  # it never came up: its exit below says why
                log.info("session %s: worker did not initialize: %r", self.core.session_id, error)
            info = await handle.wait_stopped()  # this live effect vetoes passivation
        except trio.Cancelled:
            await self._orphaned(handle)
            raise
        why = info.fence_reason or (
            f"exited with status {info.returncode}"
            if info.signal is None
            else f"killed by signal {info.signal}"
        )
        await self.tell(WorkerExited(handle.attempt_id, why, _stderr_tail(handle, info)))

    async def _orphaned(self, handle: WorkerHandle) -> None:
        """The actor stopped while its worker ran: stop the worker (bounded, shielded) and
        give its slot back; the next incarnation fails the turn it ran `runtime_lost`."""
        with trio.move_on_after(STOP_BOUND_S) as scope:
            scope.shield = True
            try:
                await handle.stop("actor stopped")
            except _WORKER_GONE as error:
                log.warning("session %s: orphaned worker stop: %r", self.core.session_id, error)
        if self.capacity.holds_slot:
            self.capacity.release_slot()
            self.core.ctx.slots.mark_idle(self.core.session_id, False)
        self.core.ctx.slots.waiting.pop(self.core.session_id, None)
        for owner in self.core.ctx.activations.release(self.core.session_id):  # hand it on
            with trio.move_on_after(STOP_BOUND_S) as told:
                told.shield = True
                await self._tell_to(owner, ActivationFree())

    def _pumping(self, handle: WorkerHandle, turn_id: str,
                 text: str) -> Callable[[], Awaitable[None]]:  # fmt: skip
        """Feed the turn's events to the actor, one message each (immutable once sent): the
        actor takes every queued one at once and applies them together."""

        home = os.path.dirname(os.path.realpath(str(self.core.ctx.store.path)))

        async def pump() -> None:
            try:  # a prompt over 16 KiB travels as an artifact in the home (its turn's)
                events = handle.prompt(turn_id, text, tools=self.attempt.tools, artifacts=home)
                async for event in events:
                    await self.tell(Progress(handle.attempt_id, (event,)))
            except MaiaError as error:
                lost = WorkerEvent(turn_id, "lost", error.message)
                await self.tell(Progress(handle.attempt_id, (lost,)))

        return pump

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
        actions = gone_reasons(actions, timed_out=self.attempt.timed_out, exit_reason=reason)
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

        await self.core.commit(body)
        self.core.approvals.clear()
        self.attempt.handle = None
        self.buffer.item, self.buffer.started = None, None
        self.core.queue = after
        self.after_commit(actions)
        self.capacity.settle_slot()
        self.core.notify(*(a.turn_id for a in actions if isinstance(a, q.FailTurn)))

    async def tick(self, *, now: int | None = None) -> None:
        after, actions = q.step(self.core.queue, q.Tick(), self.core.now() if now is None else now)
        if after != self.core.queue:
            self.core.queue = after
            self.after_commit(actions)
