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
from maia.core import MaiaError, new_id
from supervision.workers import ExitInfo, WorkerFailed, WorkerHandle
from supervision.workers import TurnEvent as WorkerEvent

from . import _queue as q
from . import _sql as sql
from ._actor import SessionCore
from ._approvals import withdraw_pending
from ._failures import record_failure
from ._launch import AGENT_KINDS, end_attempt, record_attempt, state_dir, worker_spec
from ._lifecycles import SessionEvent, TurnEvent
from ._messages import (
    ActivationFree,
    Progress,
    WorkerExited,
    WorkerInitialized,
    WorkerSpawned,
)
from ._store import Draft, OpenItem, flush_item, session_step, turn_step

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


def _worker_call(name: str, fn: Callable[[], Awaitable[object]]) -> Callable[[], Awaitable[None]]:
    """An effect calling the worker; a failure is logged (its exit tells the actor)."""

    async def call() -> None:
        try:
            await fn()
        except _WORKER_GONE as error:
            log.warning("worker %s failed: %r", name, error)

    return call


class WorkerOps(SessionCore):
    worker: WorkerHandle | None = None
    item: OpenItem | None = None
    started: str | None = None  # a running turn whose `started` is not yet written
    failure: str | None = None
    flush_at: float | None = None
    item_seq: int = 0
    timed_out: str | None = None  # the turn interrupted for passing it
    tools: bool = False  # an agent worker: it asks approvals as `maia.approval` tool calls

    def started_unflushed(self, turn_id: str) -> bool:
        return self.started == turn_id

    def mark_started_flushed(self, turn_id: str) -> None:
        if self.started == turn_id:
            self.started = None

    # -- side effects ---------------------------------------------------------------------

    def after_commit(self, actions: tuple[q.QueueAction, ...]) -> None:
        for action in actions:
            match action:
                case q.StartWorker():
                    self.effect("launch", self._launch)
                case q.Dispatch(turn_id):
                    handle = self.worker
                    memo = self.memory.turns.get(turn_id)
                    if handle is not None and memo is not None:
                        self.item, self.started, self.failure, self.item_seq = None, None, None, 0
                        self.effect("pump", self._pumping(handle, turn_id, memo.text))
                case q.SendInterrupt(turn_id) if self.worker is not None:
                    interrupt = functools.partial(self.worker.interrupt, turn_id)
                    self.effect("interrupt", _worker_call("interrupt", interrupt))
                case q.StopWorker(reason) if self.worker is not None:
                    stop = functools.partial(self.worker.stop, reason)
                    self.effect("stop", _worker_call("stop", stop))
        idle = self.core.worker is q.Worker.READY and self.core.idle_since is not None
        self.ctx.slots.mark_idle(self.session_id, idle)
        self.settle_activation()

    async def activation_free(self) -> None:
        """An activation may be ours now: dispatch the next turn if one waits."""
        after, actions = self.step(q.Wake(), self.now())
        if after == self.core and not actions:
            self.settle_activation()
            return
        await self.commit(lambda conn, draft: self.apply_rows(conn, draft, after, actions))
        self.core = after
        self.after_commit(actions)
        self.notify(*(a.turn_id for a in actions if isinstance(a, q.Dispatch)))

    async def _tell_to(self, session_id: str, message: object) -> None:
        try:
            await self.ctx.tell(session_id, message)
        except (MaiaError, ActorError) as error:
            log.warning("session %s: %s to %s not delivered: %r", self.session_id,
                        type(message).__name__, session_id, error)  # fmt: skip

    async def _tell(self, message: object) -> None:
        try:
            await self.ctx.tell(self.session_id, message)
        except (MaiaError, ActorError) as error:  # stopping: the next incarnation recovers
            log.warning("session %s: %s not delivered: %r", self.session_id,
                        type(message).__name__, error)  # fmt: skip

    async def reclaim(self) -> None:
        """Release an idle worker at once (its slot is wanted elsewhere)."""
        since = self.core.idle_since
        if since is not None:
            await self.tick(now=since + self.core.idle_ms)

    async def _launch(self) -> None:
        row = await self.ctx.store.read(lambda conn: sql.launch_row(conn, self.session_id))
        try:
            executor = self.config.executor(row[0])  # builtin:, user: or this Project's own
            self.wall_time_ms = executor.wall_time_ms if executor.kind == "exec" else None
            self.tools = executor.kind in AGENT_KINDS
            output = self.config.limits.max_output_bytes_per_tool
            state = state_dir(str(self.ctx.store.path), self.session_id)
            spec = worker_spec(executor, row[1], self.ctx.environ, max_output_bytes=output,
                               session_id=self.session_id, state=state,
                               conversation_id=row[2])  # fmt: skip
            handle = await self.ctx.workers.start_worker(spec)
        except MaiaError as error:
            await self._tell(WorkerExited(None, f"start failed: {error.message}"))
            return
        except Exception as error:  # a launch bug must fail this Session's start, not the Node
            log.exception("session %s: worker launch failed", self.session_id)
            await self._tell(WorkerExited(None, f"start failed: {error!r}"[:200]))
            return
        try:
            await self._tell(WorkerSpawned(handle))
            try:
                await handle.wait_initialized()
                await self._tell(WorkerInitialized(handle.attempt_id))
            except WorkerFailed as error:  # it never came up: its exit below says why
                log.info("session %s: worker did not initialize: %r", self.session_id, error)
            info = await handle.wait_stopped()  # this live effect vetoes passivation
        except trio.Cancelled:
            await self._orphaned(handle)
            raise
        why = info.fence_reason or (
            f"exited with status {info.returncode}"
            if info.signal is None
            else f"killed by signal {info.signal}"
        )
        await self._tell(WorkerExited(handle.attempt_id, why, _stderr_tail(handle, info)))

    async def _orphaned(self, handle: WorkerHandle) -> None:
        """The actor stopped while its worker ran: stop the worker (bounded, shielded) and
        give its slot back; the next incarnation fails the turn it ran `runtime_lost`."""
        with trio.move_on_after(STOP_BOUND_S) as scope:
            scope.shield = True
            try:
                await handle.stop("actor stopped")
            except _WORKER_GONE as error:
                log.warning("session %s: orphaned worker stop: %r", self.session_id, error)
        if self.holds_slot:
            self.release_slot()
            self.ctx.slots.mark_idle(self.session_id, False)
        self.ctx.slots.waiting.pop(self.session_id, None)
        for owner in self.ctx.activations.release(self.session_id):  # hand it on
            with trio.move_on_after(STOP_BOUND_S) as told:
                told.shield = True
                await self._tell_to(owner, ActivationFree())

    def _pumping(self, handle: WorkerHandle, turn_id: str,
                 text: str) -> Callable[[], Awaitable[None]]:  # fmt: skip
        """Feed the turn's events to the actor, one message each (immutable once sent): the
        actor takes every queued one at once and applies them together."""

        home = os.path.dirname(os.path.realpath(str(self.ctx.store.path)))

        async def pump() -> None:
            try:  # a prompt over 16 KiB travels as an artifact in the home (its turn's)
                events = handle.prompt(turn_id, text, tools=self.tools, artifacts=home)
                async for event in events:
                    await self._tell(Progress(handle.attempt_id, (event,)))
            except MaiaError as error:
                lost = WorkerEvent(turn_id, "lost", error.message)
                await self._tell(Progress(handle.attempt_id, (lost,)))

        return pump

    # -- messages from helpers ------------------------------------------------------------

    async def worker_spawned(self, message: WorkerSpawned) -> None:
        handle = message.handle
        node_epoch = self.ctx.store.node_epoch

        def body(conn: sqlite3.Connection, draft: Draft) -> None:
            record_attempt(conn, attempt_id=handle.attempt_id, session_id=draft.session_id,
                           epoch=handle.epoch, node_epoch=node_epoch, pid=handle.pid,
                           now=draft.now)  # fmt: skip

        await self.commit(body)
        wanted = self.core.worker in (q.Worker.STARTING, q.Worker.STOPPING)
        if wanted and self.worker is None:
            self.worker = handle  # its exit is the one the queue waits for
        if not wanted or self.core.worker is q.Worker.STOPPING:
            # Stopped while it started (or a launch nobody waits for): stop it now.
            self.effect("stop", _worker_call("stop", lambda: handle.stop("not wanted")))

    async def worker_initialized(self, message: WorkerInitialized) -> None:
        if self.worker is None or self.worker.attempt_id != message.attempt_id:
            return
        after, actions = self.step(q.WorkerReady(), self.now())
        if after == self.core:
            return

        def body(conn: sqlite3.Connection, draft: Draft) -> None:
            session_step(conn, draft, SessionEvent.WORKER_READY, caller="worker")
            record_failure(conn, draft, None)  # it came up: the last failure is behind it
            self.apply_rows(conn, draft, after, actions)

        await self.commit(body)
        self.core = after
        self.after_commit(actions)
        self.notify()

    async def worker_exited(self, message: WorkerExited) -> None:
        current = message.attempt_id is None or (
            self.worker is not None and self.worker.attempt_id == message.attempt_id
        )
        if not current:
            if message.attempt_id is not None:
                attempt = message.attempt_id
                await self.commit(lambda c, d: end_attempt(c, attempt, message.reason, d.now))
            return
        await self._worker_gone(message.attempt_id, message.reason, message.stderr_tail,
                                launch_failed=message.attempt_id is None)  # fmt: skip

    async def _worker_gone(self, attempt_id: str | None, reason: str, stderr: str = "", *,
                           launch_failed: bool = False) -> None:  # fmt: skip
        expected = self.core.worker is q.Worker.STOPPING
        gone = q.WorkerGone(expected=expected, launch_failed=launch_failed)
        after, actions = q.step(self.core, gone, self.now())
        if self.timed_out is not None:  # it died past its wall time: say so, not "lost"
            actions = tuple(
                q.FailTurn(a.turn_id, "wall_time_exceeded")
                if isinstance(a, q.FailTurn) and a.turn_id == self.timed_out
                else a
                for a in actions
            )
            self.timed_out = None
        self.need_slot(actions)  # the slot of the worker that went is still held

        errors = self._failure_items(actions, reason, stderr)

        def body(conn: sqlite3.Connection, draft: Draft) -> None:
            if attempt_id is not None:
                end_attempt(conn, attempt_id, reason, draft.now)
            withdraw_pending(conn, draft, f"the worker is gone: {reason}")
            self._flush_rows(conn, draft)
            for error in errors:  # the turn's failureMessage: why the worker went
                if error.turn_id in draft.turns:
                    flush_item(conn, draft, error)
            self.gone_rows(conn, draft, expected, actions, launch_failed=launch_failed)
            if launch_failed or draft.state.value == "failed":  # say why on the Session
                record_failure(conn, draft, reason)
            self.apply_rows(conn, draft, after, actions)

        await self.commit(body)
        self.approvals.clear()
        self.worker, self.item, self.started = None, None, None
        self.core = after
        self.after_commit(actions)
        self.settle_slot()
        self.notify(*(a.turn_id for a in actions if isinstance(a, q.FailTurn)))

    def _failure_items(self, actions: tuple[q.QueueAction, ...], reason: str,
                       stderr: str) -> list[OpenItem]:  # fmt: skip
        """An `error` item for each turn failed `worker_failed`, naming the cause and
        keeping the stderr tail (bounded); each also goes to node.log."""
        items = []
        text = f"the worker went: {reason}" + (
            f"\nstderr (last lines):\n{stderr}" if stderr else ""
        )
        for action in actions:
            if isinstance(action, q.FailTurn) and action.reason == "worker_failed":
                log.warning("session %s: turn %s failed worker_failed: %s", self.session_id,
                            action.turn_id, text)  # fmt: skip
                self.item_seq += 1
                items.append(
                    OpenItem(new_id("item"), action.turn_id, self.item_seq, "error", text, True)
                )
        return items

    def _item_clean(self, item: OpenItem) -> bool:
        return item.stored and item.stored_text_len == len(item.text) and not item.completed

    def _flush_rows(self, conn: sqlite3.Connection, draft: Draft) -> None:
        """Write the buffered `started` and item text. Runs inside the write fn while the
        actor waits for it; if that transaction fails, the buffer is lost with it (the turn's
        end writes its final text again)."""
        if self.started is not None and self.started in draft.turns:
            turn_step(conn, draft, self.started, TurnEvent.STARTED, caller="worker")
            self.started = None
        item = self.item
        if item is not None and item.turn_id in draft.turns and not self._item_clean(item):
            flush_item(conn, draft, item)
            if item.completed:
                self.item = None

    def _item(self, turn_id: str) -> OpenItem:
        if self.item is None:
            self.item_seq += 1
            self.item = OpenItem(new_id("item"), turn_id, self.item_seq, "message")
            self._live("item.started", self.item, "")
        return self.item

    def _live(self, record: str, item: OpenItem, text: str) -> None:
        """Publish a live item record (the observation hub; ephemeral, not stored)."""
        if self.ctx.live is not None:
            self.ctx.live(record, self.session_id, item.turn_id, item.item_id, item.kind, text)

    async def tick(self, *, now: int | None = None) -> None:
        after, actions = q.step(self.core, q.Tick(), self.now() if now is None else now)
        if after != self.core:
            self.core = after
            self.after_commit(actions)
