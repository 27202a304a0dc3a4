"""The Session kind: its registry of Session actors on the runtime's shared services.

`SESSIONS.open(runtime)` recovers what the previous Node left (see `_recovery`), runs the
registry and the flush timer, and resumes Sessions with queued turns; handlers reach the
result as `runtime[SESSIONS]`. Leaving it stops every worker boundedly while the actors can
still record their last events, before the runtime stops the actors.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any

import attrs
import trio

from actors._errors import ActorError, AskTimedOut
from actors._flush import FlushTimer
from actors._notify import Notifier
from actors._registry import ActorRegistry
from actors._runtime import ActorRuntime
from actors._table import TransitionTable
from actors._workers import WorkerPool, WorkerSlots
from maia.config import UserConfig
from maia.protocol import Clock, MaiaError
from storage import MutationResult, Storage
from supervision.workers import WorkerSupervisor

from ._lifecycles import SESSION_TABLE, TURN_TABLE
from ._messages import Message, PendingSend, Resume, SendBatch, SendTurn, SessionContext
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
    pool: WorkerPool
    recovery: RecoveryReport | None = None
    _batches: dict[str, SendBatch] = attrs.field(factory=dict)

    @property
    def workers(self) -> WorkerSupervisor:
        return self.pool.supervisor

    @property
    def slots(self) -> WorkerSlots:
        return self.pool.slots

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
            raise AskTimedOut(f"session/{session_id}", int(ASK_TIMEOUT_S * 1000), "turn.send")
        return pending.answer.unwrap()

    def live_workers(self) -> int:
        return self.pool.live_workers()


@attrs.frozen
class SessionKind:
    """The Session kind (`runtime[SESSIONS]` is its `SessionRuntime`)."""

    name: str = "session"
    tables: Sequence[TransitionTable[Any, Any]] = (SESSION_TABLE, TURN_TABLE)

    @asynccontextmanager
    async def open(self, runtime: ActorRuntime) -> AsyncIterator[SessionRuntime]:
        store, clock, config = runtime.store, runtime.clock, runtime.config
        pool = runtime.extension(WorkerPool)
        live: Callable[[str, str, str, str, str, str], None] | None = runtime.options.get("live")
        recovery = await recover_sessions(store, clock.wall_ms())
        notifier = Notifier()
        holder: dict[str, SessionContext] = {}

        async def spawn(session_id: str) -> Any:
            actor: SessionActor = await rehydrate(holder["ctx"], session_id)
            return actor.handle

        async with trio.open_nursery() as nursery:
            registry: ActorRegistry[Message, Any] = await runtime.start_registry(
                self.name, spawn, nursery=nursery, capacity=64,
                idle_s=runtime.options.get("passivate_after_s", 300.0),
            )  # fmt: skip
            flush_timer = FlushTimer(FLUSH_MS / 1000)
            nursery.start_soon(flush_timer.serve, nursery)
            holder["ctx"] = SessionContext(
                store=store, clock=clock, config=config, workers=pool.supervisor,
                notifier=notifier, slots=pool.slots, nursery=nursery, tell=registry.tell,
                environ=runtime.environ, live=live, flush_timer=flush_timer,
            )  # fmt: skip
            facade = SessionRuntime(store, clock, config, registry, notifier, pool, recovery)
            for session_id in recovery.resumable:
                nursery.start_soon(_resume, registry, session_id)
            try:
                yield facade
            finally:
                # Stop the workers while the pumps still read their last events (a handle
                # whose reader is gone cannot deliver a turn's end), then the actors and
                # their helpers, before the worker pool closes.
                await pool.stop_all("node stopping")
                nursery.cancel_scope.cancel()


SESSIONS = SessionKind()
KIND = SESSIONS  # what `python -m actors._diagrams` collects


async def _resume(registry: ActorRegistry[Message, Any], session_id: str) -> None:
    try:
        await registry.tell(session_id, Resume())
    except (MaiaError, ActorError):
        return  # it resumes on its next message
