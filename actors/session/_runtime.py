"""The Session kind: its registry of Session actors on the runtime's shared services.

`SESSIONS.open(runtime)` recovers what the previous Node left (see `_recovery`), runs the
registry and the flush timer, and resumes Sessions with queued turns; handlers reach the
result as `runtime[SESSIONS]`. Leaving it stops every worker boundedly while the actors can
still record their last events, before the runtime stops the actors.
"""

from __future__ import annotations

import collections
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any, Final

import attrs
import trio

from actors._activations import ActivationSlots, Held
from actors._errors import ActorError
from actors._flush import FlushTimer
from actors._graph import Edge
from actors._notify import Notifier
from actors._registry import ActorRegistry
from actors._runtime import ActorRuntime
from actors._table import TransitionTable
from actors._workers import WorkerPool, WorkerSlots
from maia.config import EffectiveConfig, UserConfig
from maia.core import Clock, MaiaError
from storage import MutationResult, Storage
from supervision.workers import WorkerSupervisor

from ._create import CreateSession, UnbornSession
from ._lifecycles import SESSION_TABLE, TURN_TABLE
from ._messages import Message, Resume, SendTurn, SessionContext
from ._recovery import RecoveryReport, recover_sessions
from ._session import rehydrate

log = logging.getLogger("maia.session")
ASK_TIMEOUT_S = 4.5  # inside the API's 5 s request deadline
# Sessions created most recently and not used since whose actors stay live for the idle
# bound; an older one is passivated at once when a newer one is created, so a burst of
# creations holds at most this many actors (the Node's memory: docs/performance.md), while a
# Session just created (often sent a turn next) keeps its actor as any other Session does.
RECENT_CREATIONS_LIVE: Final = 8
FLUSH_MS = 25  # a running turn's buffered rows reach storage at most this late


@attrs.define
class SessionRuntime:
    """What handlers use: ask a Session's actor, wait for changes, read capacity."""

    store: Storage
    clock: Clock
    config: UserConfig
    registry: ActorRegistry[Message | CreateSession, Any]
    notifier: Notifier
    pool: WorkerPool
    activations: ActivationSlots
    recovery: RecoveryReport | None = None
    creating: set[str] = attrs.field(factory=set)  # IDs whose creation is under way
    created: collections.deque[str] = attrs.field(factory=collections.deque)  # newest last

    @property
    def workers(self) -> WorkerSupervisor:
        return self.pool.supervisor

    @property
    def slots(self) -> WorkerSlots:
        return self.pool.slots

    async def create(self, session_id: str, message: CreateSession) -> MutationResult:
        """Create the Session `session_id` through its own actor (the table's creation
        row). Raises `idempotency_conflict` and what the write raises."""
        self.creating.add(session_id)
        try:
            result: MutationResult = await self.registry.ask(session_id, message,
                                                             within=ASK_TIMEOUT_S)  # fmt: skip
        finally:
            self.creating.discard(session_id)
        self.created.append(session_id)
        if len(self.created) > RECENT_CREATIONS_LIVE:
            # Not kept for the idle bound: its next message rehydrates it (refused, and left
            # to the idle sweep, if it is busy or holds effects by now).
            self.registry.passivate_now(self.created.popleft())
        return result

    async def ask(self, session_id: str, message: Message) -> Any:
        """Deliver a client message to the Session's actor and return its answer.

        Raises what the actor raises (`MaiaError`), `resource_not_found` for no such Session.
        """
        return await self.registry.ask(session_id, message, within=ASK_TIMEOUT_S)

    async def send(self, session_id: str, message: SendTurn) -> MutationResult:
        """Queue a turn. Sends queued together for one Session are applied in one
        transaction by its actor. Raises what the actor's send raises."""
        result: MutationResult = await self.registry.ask(session_id, message,
                                                         within=ASK_TIMEOUT_S)  # fmt: skip
        return result

    def live_workers(self) -> int:
        return self.pool.live_workers()

    def waiting_for(self, session_id: str) -> tuple[str, Held] | None:
        """The capacity limit the Session's next turn waits for, if any: (the limit's
        name, its scope and value)."""
        held = self.activations.held_by(session_id)
        if held is not None:
            return "maxConcurrentActivations", held
        slot = self.pool.slots.waiting.get(session_id)
        if slot is not None:
            return "maxLiveSessions", Held("node" if slot[0] == "node" else "project", slot[1])
        return None


EDGES: Final = (
    Edge("api", "session", "ask", ("CreateSession", "SendTurn", "CancelTurn", "InterruptTurn",
         "StopSession", "RenameSession", "ArchiveSession", "RespondApproval"),
         "mailbox 64, deadline 4.5 s"),
    Edge("session", "storage", "ask", ("write", "read"), "mailbox 4096, admission 5 s"),
    Edge("session", "worker", "ask", ("prompt", "interrupt", "stop", "tool_result"),
         "bounded stop 30 s",
         via_effect=True),
    Edge("worker", "session", "tell", ("Progress", "WorkerSpawned", "WorkerInitialized",
         "WorkerExited"), "mailbox 64", via_effect=True),
    Edge("session", "session", "tell", ("Flush", "Resume"), "mailbox 64", via_effect=True),
    Edge("session", "other sessions", "tell", ("Reclaim", "Resume"), "mailbox 64",
         via_effect=True),
    Edge("session", "notifier", "tell", ("notify", "publish"), "never blocks"),
    Edge("session", "observation hub", "tell", ("live item records",), "never blocks"),
)  # fmt: skip


@attrs.frozen
class SessionKind:
    """The Session kind (`runtime[SESSIONS]` is its `SessionRuntime`)."""

    name: str = "session"
    tables: Sequence[TransitionTable[Any, Any]] = (SESSION_TABLE, TURN_TABLE)
    edges: Sequence[Edge] = EDGES

    @asynccontextmanager
    async def open(self, runtime: ActorRuntime) -> AsyncIterator[SessionRuntime]:
        store, clock, config = runtime.store, runtime.clock, runtime.config
        pool = runtime.extension(WorkerPool)
        live: Callable[[str, str, str, str, str, str], None] | None = runtime.options.get("live")
        recovery = await recover_sessions(store, clock.wall_ms(), self.name)
        runtime.timers.committed(self.name, recovery.timers_dropped, ())
        notifier = Notifier()
        holder: dict[str, SessionContext] = {}
        activations = ActivationSlots()
        config_of = runtime.options.get("config_of") or _started_with(config)

        async def spawn(session_id: str) -> Any:
            ctx = holder["ctx"]
            try:
                return await rehydrate(ctx, session_id)
            except MaiaError as error:
                if error.code != "resource_not_found" or session_id not in facade.creating:
                    raise
            path = runtime.write_path(self.name, session_id)
            return UnbornSession(ctx, session_id, path, lambda: born(session_id))

        async def born(session_id: str) -> Any:
            """A created Session's first message: it is in use, no longer passivated early."""
            with contextlib.suppress(ValueError):
                facade.created.remove(session_id)
            return await rehydrate(holder["ctx"], session_id)

        async with trio.open_nursery() as nursery:
            registry: ActorRegistry[Message | CreateSession, Any] = await runtime.start_registry(
                self.name, spawn, nursery=nursery, capacity=64, restart_message=Resume,
                idle_s=runtime.options.get("passivate_after_s", 300.0),
            )  # fmt: skip
            flush_timer = FlushTimer(FLUSH_MS / 1000)
            nursery.start_soon(flush_timer.serve, nursery)
            holder["ctx"] = SessionContext(
                store=store, clock=clock, config=config, workers=pool.supervisor,
                notifier=notifier, slots=pool.slots, tell=registry.tell,
                environ=runtime.environ, live=live, flush_timer=flush_timer,
                activations=activations, config_of=config_of,
                write_path=lambda session_id: runtime.write_path(self.name, session_id),
            )  # fmt: skip
            facade = SessionRuntime(store, clock, config, registry, notifier, pool, activations,
                                    recovery)  # fmt: skip
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


def _started_with(config: UserConfig) -> Callable[[str | None], Awaitable[EffectiveConfig]]:
    """Without the service layer's admitted configuration (kind tests): the start's."""

    async def of(project_id: str | None) -> EffectiveConfig:
        return EffectiveConfig(config, None, project_id)

    return of


async def _resume(registry: ActorRegistry[Message | CreateSession, Any], session_id: str) -> None:
    try:
        await registry.tell(session_id, Resume())
    except (MaiaError, ActorError) as error:  # it resumes on its next message instead
        log.warning("session %s not resumed after recovery: %r", session_id, error)
