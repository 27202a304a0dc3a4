"""The actor runtime of a Node: every kind's registry on shared services.

`open_actor_runtime(store, clock=..., config=..., kinds=(SESSIONS, ...))` runs the durable
timers, opens each kind in order (its recovery first, then its registry), yields an
`ActorRuntime`, and on the way out closes the kinds in reverse order (each stops its own
effects boundedly), then the timers. A kind is anything with a `name`, its `tables` and an
`open(runtime)` async context manager yielding the kind's facade, which handlers reach as
`runtime[KIND]` (typed by the kind). Adding a kind is its package and one entry in the
Node's kind list; the runtime does not change. A kind may yield None: it is not running
yet, and `publish`es its facade when it opens later (on its first use).

What the runtime gives each kind: the storage actor, the clock, the user configuration, the
environment, the timers, `start_registry` (a registry served in the runtime's nursery, its
timers routed to it, crashes restarted under `policy`), `write_path(kind, actor_id)` and
`extensions`, a typed slot map where shared services a kind opens (the worker supervisor and
its slots) are found by the kinds after it.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any, Generic, Protocol, TypeVar

import attrs
import trio

from maia.core import Clock, MaiaError
from supervision import RestartPolicy

from ._aggregate import AggregateActor, Core
from ._errors import ActorError
from ._registry import ActorRegistry, Spawn
from ._table import TransitionTable
from ._timers import DurableTimers, Fired
from ._write import Rows, Write, WritePath, recovery_changes

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)
A = TypeVar("A")
M = TypeVar("M")
log = logging.getLogger("maia.actors")
ASK_TIMEOUT_S = 4.5  # inside the API's 5 s request deadline
TIMER_ASK_S = 30.0  # a fired timer's handling; past it, it counts delivered (the actor has it)
# The Session kind's passivation bound (its `passivate_after_s` option) unless a caller
# gives one: an idle Session actor with no live effect (a warm worker is one, and vetoes)
# is dropped from memory this long after its last message and rehydrated from storage by
# the next. Short, because only Sessions without a worker are affected (never run, or
# released after their idle bound), and rehydrating is one read where a turn to them
# starts a worker anyway; 10,000 idle Sessions then cost ~1.5 KB each, not ~6 KB.
PASSIVATE_AFTER_S = 5.0


class Kind(Protocol[T_co]):
    """A kind of aggregate the runtime runs."""

    @property
    def name(self) -> str: ...

    @property
    def tables(self) -> Sequence[TransitionTable[Any, Any]]: ...

    def open(self, runtime: ActorRuntime) -> AbstractAsyncContextManager[T_co]: ...


@attrs.define(eq=False)
class ActorRuntime:
    """What kinds run on and what the service layer reaches them through."""

    store: Any  # storage.Storage
    clock: Clock
    config: Any  # maia.config.UserConfig
    environ: Mapping[str, str]
    timers: DurableTimers
    nursery: trio.Nursery
    policy: RestartPolicy = attrs.field(factory=RestartPolicy)
    extensions: dict[type[Any], Any] = attrs.field(factory=dict)
    options: Mapping[str, Any] = attrs.field(factory=dict)  # per-kind settings (tests, benches)
    _kinds: dict[str, Any] = attrs.field(factory=dict)
    _registries: list[ActorRegistry[Any, Any]] = attrs.field(factory=list)

    def __getitem__(self, kind: Kind[T]) -> T:
        """The facade `kind` yielded. Raises `unavailable` when it is not running."""
        facade = self._kinds.get(kind.name)
        if facade is None:
            raise MaiaError("unavailable", f"{kind.name}s are not running",
                            {"target": kind.name})  # fmt: skip
        return facade  # type: ignore[no-any-return]

    def __contains__(self, kind: Kind[Any]) -> bool:
        return self._kinds.get(kind.name) is not None

    def publish(self, name: str, facade: Any) -> None:
        """The facade of kind `name`, opened after the start (a kind opened on its first use
        yields None at the start: maia.service's on-demand kinds); None withdraws it."""
        self._kinds[name] = facade

    def extension(self, cls: type[T]) -> T:
        """A shared service an earlier kind provided (`provide`). Raises KeyError."""
        return self.extensions[cls]  # type: ignore[no-any-return]

    def provide(self, service: Any) -> None:
        self.extensions[type(service)] = service

    def write_path(self, kind: str, actor_id: str) -> WritePath:
        return WritePath(self.store, self.clock, self.timers, kind, actor_id)

    async def start_registry(
        self,
        name: str,
        spawn: Spawn[M, Any],
        *,
        nursery: trio.Nursery,
        restart_message: Callable[[], M] | None = None,
        **options: Any,
    ) -> ActorRegistry[M, Any]:
        """A registry served in the kind's `nursery` (the kind's lifetime: its actors and
        their effects stop when the kind closes, before the kinds opened earlier close);
        `name`'s timers are asked of its actors (bounded by `TIMER_ASK_S`): a handler that
        refuses one (its write failed: `unavailable` on a full disk) has it fired again
        (`DurableTimers._fire`)."""
        registry: ActorRegistry[M, Any] = ActorRegistry(
            name, spawn, policy=self.policy, restart_message=restart_message,
            monotonic_ms=self.clock.monotonic_ms, **options,
        )  # fmt: skip
        await nursery.start(registry.serve)

        async def deliver(actor_id: str, fired: Fired) -> None:
            await registry.ask(actor_id, fired, within=TIMER_ASK_S)  # type: ignore[arg-type]

        self.timers.route(name, deliver)
        self._registries.append(registry)
        return registry

    def registries(self) -> Iterator[ActorRegistry[Any, Any]]:
        return iter(self._registries)

    @property
    def kinds(self) -> tuple[str, ...]:
        return tuple(self._kinds)


@asynccontextmanager
async def open_actor_runtime(
    store: Any,
    *,
    clock: Clock,
    config: Any,
    kinds: Sequence[Kind[Any]],
    environ: Mapping[str, str] | None = None,
    policy: RestartPolicy | None = None,
    options: Mapping[str, Any] | None = None,
) -> AsyncIterator[ActorRuntime]:
    """Run `kinds` (in order; closed in reverse) for the block. See the module."""
    names = [k.name for k in kinds]
    if len(set(names)) != len(names):
        raise ValueError(f"kinds registered twice: {names}")
    timers = DurableTimers(store, clock)
    async with trio.open_nursery() as nursery:
        await nursery.start(timers.serve)
        runtime = ActorRuntime(
            store, clock, config, dict(os.environ if environ is None else environ), timers,
            nursery, policy or RestartPolicy(),
            options={"passivate_after_s": PASSIVATE_AFTER_S, **(options or {})},
        )  # fmt: skip
        async with contextlib.AsyncExitStack() as stack:
            for kind in kinds:
                runtime._kinds[kind.name] = None  # a None facade: it publishes its own
                facade = await stack.enter_async_context(kind.open(runtime))
                if facade is not None:
                    runtime.publish(kind.name, facade)
            timers.open()
            yield runtime
        nursery.cancel_scope.cancel()


@attrs.define(eq=False)
class AggregateKindHandle(Generic[M]):
    """A simple kind's facade: ask or tell an aggregate's actor (spawning it from storage)."""

    name: str
    registry: ActorRegistry[M, Any]

    async def ask(self, aggregate_id: str, message: M, *, within: float = ASK_TIMEOUT_S) -> Any:
        return await self.registry.ask(aggregate_id, message, within=within)

    async def tell(self, aggregate_id: str, message: M) -> None:
        await self.registry.tell(aggregate_id, message)


@attrs.frozen
class AggregateKind(Generic[A, M]):
    """A kind with one row per actor, run by `AggregateActor` from its pure core.

    `load(conn, id)` reads the record (None when it does not exist yet: the core then sees
    `None` and may create it). `in_states(conn, states)`, when given, reads the records in
    the given states: on open, every record in a state with a recovery path gets the table's
    `recover_with` event (the recovery column at work), all in one write, before the
    registry serves; each recovered actor is then told `restart()`.
    """

    name: str
    core: Core[A, M]
    load: Callable[[sqlite3.Connection, str], A | None]
    restart: Callable[[], M] | None = None
    in_states: Callable[[sqlite3.Connection, Sequence[str]], Sequence[A]] | None = None
    idle_s: float = 300.0
    capacity: int = 64

    @property
    def tables(self) -> Sequence[TransitionTable[Any, Any]]:
        return (self.core.table,)

    @asynccontextmanager
    async def open(self, runtime: ActorRuntime) -> AsyncIterator[AggregateKindHandle[M]]:
        holder: dict[str, ActorRegistry[M, Any]] = {}
        woken: Sequence[str] = ()
        if self.in_states is not None:
            woken = await recover(runtime, self.name, self.core.table, self.core.rows,
                                  self.in_states)  # fmt: skip

        async def spawn(aggregate_id: str) -> AggregateActor[A, M]:
            record = await runtime.store.read(lambda c: self.load(c, aggregate_id))
            registry = holder["registry"]

            async def tell_self(message: M) -> None:
                await registry.tell(aggregate_id, message)

            path = runtime.write_path(self.name, aggregate_id)
            return AggregateActor(self.core, path, record, tell_self)

        async with trio.open_nursery() as nursery:
            registry = await runtime.start_registry(
                self.name, spawn, nursery=nursery, restart_message=self.restart,
                idle_s=self.idle_s, capacity=self.capacity,
            )  # fmt: skip
            holder["registry"] = registry
            if self.restart is not None:
                for aggregate_id in woken:
                    nursery.start_soon(_wake, registry, aggregate_id, self.restart())
            yield AggregateKindHandle(self.name, registry)
            nursery.cancel_scope.cancel()


async def recover(
    runtime: ActorRuntime,
    kind: str,
    table: TransitionTable[Any, Any],
    rows: Rows[Any],
    in_states: Callable[[sqlite3.Connection, Sequence[str]], Sequence[Any]],
) -> tuple[str, ...]:
    """Apply `table`'s recovery column to the kind's records (one write); their IDs."""
    states = [s.value for s in table.recovery_states]
    if not states:
        return ()
    records = await runtime.store.read(lambda c: in_states(c, states))
    changes = recovery_changes(table, rows, records)
    if changes:
        await runtime.write_path(kind, "").commit(Write(changes=changes))
    return tuple(c.after.id for c in changes)


async def _wake(registry: ActorRegistry[Any, Any], aggregate_id: str, message: Any) -> None:
    try:
        await registry.tell(aggregate_id, message)
    except (MaiaError, ActorError):  # it recovers on its next message instead
        log.warning("%s/%s not woken after recovery", registry.name, aggregate_id, exc_info=True)
