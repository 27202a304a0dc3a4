"""The routine scheduler and the kind that runs it with the RoutineActors.

Claims happen in each RoutineActor on its durable `slot` timer. The scheduler launches what
was claimed: each tick makes at most 32 launch attempts, fresh claims first
(`plan_launches`), and takes up only as many of a Project's claimed fires at once as its
maxPendingRoutineTicks (asked of the service through `LauncherSlot.pending_limit`; the
others wait, still launching, for a later tick). A launch creates the fire's Session
(attached to the fire before its turn is sent) and sends the prompt as the routine's
scheduler actor, through a `Launcher` the service layer provides (it enforces the
scheduler's allow-list). Every answer goes back to the routine's actor, which writes it.
A saturated launch is retried each tick until 10 minutes after its claim. Each tick also
stops the live Session of a settled fire whose only turn is its own and finished, at the
revision the query read.

On open, before anything is served, every routine with claimed launching fires is told
`RecoverFires`: started only from its scheduler's own turn.send receipt, else
`outcome_unknown`. A routine with an unclaimed manual fire is ticked, so its next tick
judges it.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from contextlib import asynccontextmanager
from typing import Any, Final, Protocol

import attrs
import trio

from actors import ActorRuntime, Edge, Fired
from actors._actor import DEFAULT_ASK_TIMEOUT_S
from actors._registry import ActorRegistry
from maia.core import MaiaError

from ._actor import SLOT, LaunchAnswer, Message, RecoverFires, RoutineActor
from ._budget import Candidate, PendingLimits, plan_launches
from ._events import Attached, Launched, LaunchRefused
from ._sql import (
    FireRow,
    RoutineRow,
    get_fire,
    get_routine,
    launching_fires,
    launching_projects,
    routines_with_claims,
    routines_with_unclaimed_runs,
    started_unsettled,
    stoppable_sessions,
)
from ._table import FailReason

log = logging.getLogger("maia.routines")
KIND: Final = "routine"
TICK_S: Final = 1.0  # while fires are launching
IDLE_TICK_S: Final = 30.0  # otherwise (a claim or a run pokes it at once)
LAUNCH_BOUND_S: Final = 10.0
STOPS_PER_TICK: Final = 32


PendingLimitOf = Callable[[str | None], Awaitable[int]]


class Launcher(Protocol):
    """What the scheduler may do, as the routine's scheduler actor (the service's gate)."""

    async def create_session(self, routine: RoutineRow, fire: FireRow) -> str: ...

    async def send_turn(self, routine: RoutineRow, fire: FireRow, session_id: str) -> str: ...

    async def stop_session(self, routine_id: str, session_id: str, revision: int) -> None: ...


def reason_of(error: MaiaError) -> FailReason:
    """The fire's failure reason for a launch refusal (spec: the closed reason set). The
    launcher names a Project folder it cannot use in details.reason."""
    if error.details.get("reason") == FailReason.WORKSPACE_UNAVAILABLE.value:
        return FailReason.WORKSPACE_UNAVAILABLE
    match error.code:
        case "saturated":
            return FailReason.SATURATED
        case "held":
            return FailReason.HELD
        case "connection_disabled":
            return FailReason.CONNECTION_DISABLED
        case "resource_not_found" | "validation_failed" if error.details.get("resource") in (
            "project", None,
        ):  # fmt: skip
            return FailReason.WORKSPACE_UNAVAILABLE
    return FailReason.LAUNCH_FAILED


@attrs.define(eq=False)
class LauncherSlot:
    """Where the service layer puts its `Launcher` once it is built on the runtime (the
    kind opens first, so it finds the launcher at launch time, not at open), and its
    `pending_limit`: maxPendingRoutineTicks of a Project (None: the user's, the Node's)
    as admitted. Without one, launches are bounded by the tick's budget only."""

    launcher: Launcher | None = None
    pending_limit: PendingLimitOf | None = None

    def __call__(self) -> Launcher:
        if self.launcher is None:
            raise MaiaError("unavailable", "the routine launcher is not installed yet",
                            {"target": "routine-scheduler"})  # fmt: skip
        return self.launcher


@attrs.define(eq=False)
class Scheduler:
    """The launch half of the scheduler (see the module)."""

    store: Any
    clock: Any
    registry: ActorRegistry[Message, Any]
    launcher: Callable[[], Launcher]
    tick_s: float = TICK_S
    pending_limit: Callable[[], PendingLimitOf | None] = lambda: None
    attempts: dict[str, int] = attrs.field(factory=dict)  # this Node run's launch attempts
    _poke: trio.Event = attrs.field(factory=trio.Event)

    def poke(self) -> None:
        self._poke.set()

    async def serve(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        busy = True
        while True:
            with trio.move_on_after(self.tick_s if busy else IDLE_TICK_S):
                await self._poke.wait()
            self._poke = trio.Event()
            try:
                busy = await self.tick()
            except Exception:  # a bad tick must not stop the scheduler; it is logged
                log.exception("routine scheduler tick failed")

    async def tick(self) -> bool:
        """One tick; True while fires are still launching."""
        now = self.clock.wall_ms()
        fires, projects = await self.store.read(
            lambda c: (launching_fires(c), launching_projects(c))
        )
        fires = [f for f in fires if f.claimed_ms is not None]
        candidates = [Candidate(f.routine_id, f.fire_id, f.claimed_ms or 0,
                                self.attempts.get(f.fire_id, 0),
                                projects.get(f.routine_id, ""),
                                f.session_id is not None) for f in fires]  # fmt: skip
        self.attempts = {c.fire_id: c.attempts for c in candidates if c.attempts}  # bounded
        limits = await self._limits({c.project_id for c in candidates})
        launch = plan_launches(candidates, now, limits=limits)
        for expired in launch.expire:
            await self._answer(expired.routine_id, LaunchRefused(expired.fire_id,
                                                                 FailReason.SATURATED))  # fmt: skip
        for chosen in launch.launch:
            self.attempts[chosen.fire_id] = chosen.attempts + 1
            with trio.move_on_after(LAUNCH_BOUND_S):
                await self._launch(chosen)
        for routine_id, session_id, revision in await self.store.read(
            lambda c: stoppable_sessions(c, STOPS_PER_TICK)
        ):
            try:
                await self.launcher().stop_session(routine_id, session_id, revision)
            except MaiaError as error:  # it moved since the read: the next tick sees it
                log.info("routine %s: session %s not stopped: %s", routine_id, session_id, error)
        recent = now - 10 * 60 * 1000
        return bool(fires) or bool(await self.store.read(lambda c: started_unsettled(c, recent)))

    async def _limits(self, project_ids: Iterable[str]) -> PendingLimits:
        """maxPendingRoutineTicks on the Node and of each Project, as admitted now; a
        Project whose configuration cannot be read is left to its launch to judge."""
        limit_of = self.pending_limit()
        if limit_of is None:
            return PendingLimits()
        projects: dict[str, int] = {}
        for project_id in sorted(project_ids):
            try:
                projects[project_id] = await limit_of(project_id)
            except MaiaError as error:
                log.info("routine scheduler: no limits of Project %s: %s", project_id, error)
        return PendingLimits(await limit_of(None), projects)

    async def _answer(self, routine_id: str, event: Any) -> None:
        try:
            await self.registry.ask(routine_id, LaunchAnswer(event))
        except MaiaError as error:  # e.g. the fire settled meanwhile: nothing to record
            log.info("routine %s: launch answer not recorded: %s", routine_id, error)

    async def _launch(self, chosen: Candidate) -> None:
        def read(conn: Any) -> tuple[RoutineRow | None, FireRow | None]:
            return get_routine(conn, chosen.routine_id), get_fire(conn, chosen.fire_id)

        routine, fire = await self.store.read(read)
        if routine is None or fire is None or fire.state.value != "launching":
            return
        launcher = self.launcher()
        session_id = fire.session_id
        try:
            if session_id is None:
                session_id = await launcher.create_session(routine, fire)
                await self._answer(routine.routine_id, Attached(fire.fire_id, session_id))
                fire = attrs.evolve(fire, session_id=session_id)
            turn_id = await launcher.send_turn(routine, fire, session_id)
        except MaiaError as error:
            await self._answer(routine.routine_id, LaunchRefused(fire.fire_id, reason_of(error)))
            return
        await self._answer(routine.routine_id, Launched(fire.fire_id, session_id, turn_id))


@attrs.frozen
class Routines:
    """What handlers reach as `runtime[ROUTINES]`: the routines' actors and the scheduler."""

    registry: ActorRegistry[Message, Any]
    scheduler: Scheduler

    async def ask(self, routine_id: str, message: Message) -> Any:
        return await self.registry.ask(routine_id, message)


# Who sends what to a routine actor, drawn in docs/lifecycles.md (`python -m actors._diagrams`).
EDGES: Final = (
    Edge("api", "routine", "ask", ("CreateRoutine", "ChangeRoutine"),
         f"mailbox 64, deadline {DEFAULT_ASK_TIMEOUT_S:g} s"),
    Edge("routine scheduler", "routine", "ask", ("LaunchAnswer", "RecoverFires"),
         f"mailbox 64, deadline {DEFAULT_ASK_TIMEOUT_S:g} s"),
    Edge("routine", "storage", "ask", ("write", "read"), "mailbox 4096, admission 5 s"),
    Edge("routine", "routine scheduler", "tell", ("poke",), "never blocks"),
    Edge("routine scheduler", "storage", "ask", ("read",), "mailbox 4096, admission 5 s"),
    Edge("routine scheduler", "session", "ask", ("create_session", "send_turn", "stop_session"),
         f"bounded {LAUNCH_BOUND_S:g} s per launch"),
)  # fmt: skip


@attrs.frozen
class RoutineKind:
    """The Routine kind for `open_actor_runtime(kinds=...)`. It provides a `LauncherSlot`
    that the service layer fills (`runtime.extension(LauncherSlot).launcher = ...`)."""

    tick_s: float = TICK_S
    name: str = KIND
    edges: Sequence[Edge] = EDGES

    @property
    def tables(self) -> tuple[Any, ...]:
        from ._table import ROUTINE_TABLES

        return ROUTINE_TABLES

    @asynccontextmanager
    async def open(self, runtime: ActorRuntime) -> AsyncIterator[Routines]:
        holder: dict[str, Scheduler] = {}

        async def spawn(routine_id: str) -> Any:
            path = runtime.write_path(KIND, routine_id)
            return RoutineActor(routine_id, path, runtime.clock, holder["s"].poke).handle

        slot = LauncherSlot()
        runtime.provide(slot)
        async with trio.open_nursery() as nursery:  # the kind's lifetime
            registry: ActorRegistry[Message, Any] = await runtime.start_registry(
                KIND, spawn, nursery=nursery
            )
            tick_s = float(runtime.options.get("routine.tick_s", self.tick_s))
            scheduler = Scheduler(runtime.store, runtime.clock, registry, slot, tick_s,
                                  lambda: slot.pending_limit)  # fmt: skip
            holder["s"] = scheduler
            for routine_id in await runtime.store.read(routines_with_claims):
                await registry.ask(routine_id, RecoverFires())
            await nursery.start(scheduler.serve)
            # Their routine's slot timer would claim them too (it was armed with the run);
            # this makes the next tick certain even if that timer row was lost.
            for routine_id in await runtime.store.read(routines_with_unclaimed_runs):
                await registry.tell(routine_id, Fired(SLOT, None, None, None, 0))
            try:
                yield Routines(registry, scheduler)
            finally:
                nursery.cancel_scope.cancel()


ROUTINES: Final = RoutineKind()
