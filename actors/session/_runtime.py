"""The Session runtime of a Node: the registry of Session actors and what they share.

`open_session_runtime` starts the worker supervisor (epochs from storage), recovers what the
previous Node left (see `_recovery`), runs the registry, and resumes Sessions with queued
turns. Leaving it stops every worker boundedly.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Any

import attrs
import trio

from actors._errors import ActorError, AskTimedOut
from actors._registry import ActorRegistry
from maia.config import UserConfig
from maia.protocol import Clock, MaiaError
from storage import MutationResult, Storage
from supervision.workers import WorkerSupervisor, WorkerTimings, open_worker_supervisor

from ._flush import FlushTimer
from ._launch import StorageEpochSource
from ._messages import (
    Message,
    PendingSend,
    Resume,
    SendBatch,
    SendTurn,
    SessionContext,
    WorkerSlots,
)
from ._notify import Notifier
from ._recovery import RecoveryReport, recover_sessions
from ._session import SessionActor, rehydrate

ASK_TIMEOUT_S = 4.5  # inside the API's 5 s request deadline
FLUSH_MS = 25  # a running turn's buffered rows reach storage at most this late


@attrs.define
class SessionRuntime:
    """What handlers use: ask a Session's actor, wait for changes, read capacity."""

    store: Storage
    clock: Clock
    config: UserConfig
    registry: ActorRegistry[Message, Any]
    notifier: Notifier
    slots: WorkerSlots
    workers: WorkerSupervisor
    recovery: RecoveryReport | None = None
    _batches: dict[str, SendBatch] = attrs.field(factory=dict)

    async def ask(self, session_id: str, message: Message) -> Any:
        """Deliver a client message to the Session's actor and return its answer.

        Raises what the actor raises (`MaiaError`), `resource_not_found` for no such Session.
        """
        return await self.registry.ask(session_id, message, within=ASK_TIMEOUT_S)

    async def send(self, session_id: str, message: SendTurn) -> MutationResult:
        """Queue a turn, joining the sends already waiting for this Session's actor (one
        transaction for all of them). Raises what the actor's send raises."""
        pending = PendingSend(message)
        batch = self._batches.get(session_id)
        if batch is not None and not batch.closed:
            batch.items.append(pending)
        else:
            batch = self._batches[session_id] = SendBatch([pending])
            try:
                await self.registry.ask(session_id, batch, within=ASK_TIMEOUT_S)
            except (MaiaError, ActorError) as error:
                # Refused or lost before the actor took it: nobody else will answer the
                # others. (After a deadline it may still run: they wait for their answers.)
                if not batch.closed and not isinstance(error, AskTimedOut):
                    batch.fail(error)
                raise
            finally:
                if self._batches.get(session_id) is batch:
                    del self._batches[session_id]
        with trio.move_on_after(ASK_TIMEOUT_S):
            await pending.done.wait()
        if pending.answer is None:
            raise MaiaError("deadline_exceeded", f"turn.send to {session_id} timed out",
                            {"method": "turn.send", "ms": int(ASK_TIMEOUT_S * 1000)})  # fmt: skip
        return pending.answer.unwrap()

    def live_workers(self) -> int:
        return len(self.workers.live())


STOP_BOUND_S = 30.0  # interrupt 10 s + terminate 5 s + kill, with room


@asynccontextmanager
async def open_session_runtime(
    store: Storage,
    *,
    clock: Clock,
    config: UserConfig,
    environ: Mapping[str, str] | None = None,
    timings: WorkerTimings | None = None,
    passivate_after_s: float = 300.0,
    live: Callable[[str, str, str, str, str, str], None] | None = None,
) -> AsyncIterator[SessionRuntime]:
    """Run the Session actors for the block (recovering the previous Node's Sessions first).

    Leaving the block, even by cancellation, stops every worker boundedly before the actors
    stop: the runtime runs in a shielded task that only this block's end asks to stop, so an
    outer cancel cannot cut a worker's stop (or its last events) short.
    """
    env = dict(os.environ if environ is None else environ)
    recovery = await recover_sessions(store, clock.wall_ms())
    stop = trio.Event()
    args = (store, clock, config, env, timings, passivate_after_s, recovery, stop, live)
    async with trio.open_nursery() as outer:
        runtime: SessionRuntime = await outer.start(_serve_runtime, *args)
        try:
            yield runtime
        finally:
            stop.set()


async def _serve_runtime(
    store: Storage,
    clock: Clock,
    config: UserConfig,
    env: dict[str, str],
    timings: WorkerTimings | None,
    passivate_after_s: float,
    recovery: RecoveryReport,
    stop: trio.Event,
    live: Callable[[str, str, str, str, str, str], None] | None,
    *,
    task_status: trio.TaskStatus[SessionRuntime] = trio.TASK_STATUS_IGNORED,
) -> None:
    notifier = Notifier()
    slots = WorkerSlots(config.capacity.max_live_sessions)
    with trio.CancelScope(shield=True):
        supervisor = open_worker_supervisor(StorageEpochSource(store), timings)
        async with supervisor as workers, trio.open_nursery() as nursery:
            context: dict[str, SessionContext] = {}

            async def spawn(session_id: str) -> Any:
                actor: SessionActor = await rehydrate(context["ctx"], session_id)
                return actor.handle

            registry: ActorRegistry[Message, Any] = ActorRegistry(
                "session", spawn, idle_s=passivate_after_s, capacity=64
            )
            await nursery.start(registry.serve)
            flush_timer = FlushTimer(FLUSH_MS / 1000)
            nursery.start_soon(flush_timer.serve, nursery)
            context["ctx"] = SessionContext(
                store=store, clock=clock, config=config, workers=workers, notifier=notifier,
                slots=slots, nursery=nursery, tell=registry.tell, environ=env, live=live,
                flush_timer=flush_timer,
            )  # fmt: skip
            runtime = SessionRuntime(store, clock, config, registry, notifier, slots, workers,
                                     recovery)  # fmt: skip
            for session_id in recovery.resumable:
                nursery.start_soon(_resume, registry, session_id)
            task_status.started(runtime)
            await stop.wait()
            # Stop the workers while the pumps still read their last events (a handle whose
            # reader is gone cannot deliver a turn's end), then stop the actors.
            with trio.move_on_after(STOP_BOUND_S):
                await workers.stop_all("node stopping")
            nursery.cancel_scope.cancel()


async def _resume(registry: ActorRegistry[Message, Any], session_id: str) -> None:
    try:
        await registry.tell(session_id, Resume())
    except (MaiaError, ActorError):
        return  # it resumes on its next message
