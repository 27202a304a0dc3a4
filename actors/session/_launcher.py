"""A Session's worker launches: the effects that own a worker while it runs.

The launch effect starts the attempt, tells the actor it spawned and initialized, and waits
for its end (so it vetoes passivation while the worker lives); when the actor stops (crash
or close) its cancellation stops the worker, bounded and shielded, and gives the slot back.
The pump feeds a turn's events to the actor. Each reports back through the registry
(`ctx.tell`), so a message always reaches the Session's live actor. A worker call that fails
(the worker died meanwhile) is logged, never raised: its exit reaches the actor as
`WorkerExited`.
"""

from __future__ import annotations

import functools
import logging
import os
from collections.abc import Awaitable, Callable

import trio

from actors._errors import ActorError
from maia.core import MaiaError
from supervision.workers import ExitInfo, WorkerFailed, WorkerHandle
from supervision.workers import TurnEvent as WorkerEvent

from . import _sql as sql
from ._actor import SessionCore
from ._capacity import Capacity
from ._launch import AGENT_KINDS, state_dir, worker_spec
from ._messages import ActivationFree, Progress, WorkerExited, WorkerInitialized, WorkerSpawned

log = logging.getLogger("maia.session")
STDERR_TAIL_CHARS = 2048  # of a worker's stderr, kept with a turn it failed


@functools.lru_cache(maxsize=16)
def _artifact_home(db_path: str) -> str:
    """The home a store's file lives in (resolved once: three lstat calls a turn otherwise)."""
    return os.path.dirname(os.path.realpath(db_path))


def _stderr_tail(handle: WorkerHandle, info: ExitInfo) -> str:
    """The end of what went to stderr: an exec program's lines (relayed as diagnostics),
    then the worker's own, at most `STDERR_TAIL_CHARS`."""
    diagnostics = getattr(handle, "diagnostics", ())  # a stand-in handle may keep none
    lines = [str(d.get("line", "")) for d in diagnostics if d.get("stream") == "stderr"]
    program = lines[-40:]
    text = "\n".join(filter(None, ["\n".join(program), info.stderr_tail.strip()]))
    return text[-STDERR_TAIL_CHARS:]


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


class WorkerLauncher:
    """Starts and watches the Session's worker attempts, and pumps their turns' events."""

    def __init__(self, core: SessionCore, capacity: Capacity) -> None:
        self.core = core
        self.capacity = capacity
        self.attempt = core.attempt

    async def tell_to(self, session_id: str, message: object) -> None:
        try:
            await self.core.ctx.tell(session_id, message)
        except (MaiaError, ActorError) as error:
            log.warning("session %s: %s to %s not delivered: %r", self.core.session_id,
                        type(message).__name__, session_id, error)  # fmt: skip

    async def launch(self) -> None:
        row = await self.core.ctx.store.read(
            lambda conn: sql.launch_row(conn, self.core.session_id)
        )
        try:
            executor = self.core.config.executor(row[0])  # builtin:, user: or this Project's own
            # wallTimeMs bounds one turn for every kind that takes it (exec and the agents)
            own = executor.wall_time_ms if executor.kind != "echo" else None
            self.attempt.wall_time_ms = own
            self.attempt.tools = executor.kind in AGENT_KINDS
            output = self.core.config.limits.max_output_bytes_per_tool
            state = state_dir(str(self.core.ctx.store.path), self.core.session_id)
            spec = worker_spec(executor, row[1], self.core.ctx.environ, max_output_bytes=output,
                               session_id=self.core.session_id, state=state,
                               conversation_id=row[2])  # fmt: skip
            handle = await self.core.ctx.workers.start_worker(spec)
        except MaiaError as error:
            await self.core.tell_self(WorkerExited(None, f"start failed: {error.message}"))
            return
        except Exception as error:  # a launch bug must fail this Session's start, not the Node
            log.exception("session %s: worker launch failed", self.core.session_id)
            await self.core.tell_self(WorkerExited(None, f"start failed: {error!r}"[:200]))
            return
        try:
            await self.core.tell_self(WorkerSpawned(handle))
            try:
                await handle.wait_initialized()
                await self.core.tell_self(WorkerInitialized(handle.attempt_id))
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
        await self.core.tell_self(WorkerExited(handle.attempt_id, why, _stderr_tail(handle, info)))

    async def _orphaned(self, handle: WorkerHandle) -> None:
        """The actor stopped while its worker ran: stop the worker (bounded, shielded) and
        give its slot back; the next incarnation fails the turn it ran `runtime_lost`."""
        # Shielded because this runs while the effect is being cancelled (the actor
        # stopped): unshielded, the stop's first checkpoint would raise Cancelled and leave
        # the worker running with no actor. Bounded so a stuck stop cannot hold the Node.
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
                await self.tell_to(owner, ActivationFree())

    def pumping(self, handle: WorkerHandle, turn_id: str,
                 text: str) -> Callable[[], Awaitable[None]]:  # fmt: skip
        """Feed the turn's events to the actor, one message per batch the handle has ready
        (immutable once sent; at most the worker's window): the actor takes every queued
        one at once and applies them together, in order."""

        home = _artifact_home(str(self.core.ctx.store.path))

        async def pump() -> None:
            try:  # a prompt over 16 KiB travels as an artifact in the home (its turn's)
                events = handle.prompt(turn_id, text, tools=self.attempt.tools, artifacts=home)
                batches = getattr(events, "batches", None)  # a stand-in may yield singly
                if batches is None:
                    async for event in events:
                        await self.core.tell_self(Progress(handle.attempt_id, (event,)))
                    return
                async for batch in batches():
                    await self.core.tell_self(Progress(handle.attempt_id, batch))
            except MaiaError as error:
                lost = WorkerEvent(turn_id, "lost", error.message)
                await self.core.tell_self(Progress(handle.attempt_id, (lost,)))

        return pump
