"""Per-aggregate registries: one live actor per aggregate ID, spawned on demand, passivated
when idle or when too many are live, rehydrated from storage on the next message.

Get-or-spawn is race-free without a lock: the first caller for an ID parks a placeholder
before its first await, so every later caller waits on it instead of spawning a twin. An
actor being passivated drains what it holds and stops before a new one for the same ID is
spawned, so two live actors never share an aggregate (and its storage rows).

The live map is ordered least recently used first (a touch moves an ID to the end), so LRU
eviction takes the first entry and the idle sweep can stop at the first recent one. Per
live actor the registry holds one dict slot and the `Actor` itself; there is no per-actor
timer. An actor holding live effects (its `vetoes`) is never passivated, idle or not.

A crashed actor (a handler bug, or one of its effects raised: see `_effects`) is logged with
its traceback to the `maia.actors` logger (the Node's log), its effects are cancelled, and
it is restarted from storage at once (told `restart_message`, when the kind gives one) as
long as it crashed at most `policy.intensity` times within `policy.period_ms`; beyond that it
stays down until its next message rehydrates it, and the give-up is logged too.

`spawn(id)` returns either a message handler or a `Behaviour` (an object with
`handle_batch(envelopes)`; given its `EffectScope` through `attach` before any message).
"""

from __future__ import annotations

import collections
import logging
import math
from collections.abc import Awaitable, Callable
from typing import Generic, Protocol, TypeVar

import attrs
import trio

from maia.protocol import MaiaError
from supervision import RestartPolicy

from ._actor import DEFAULT_ASK_TIMEOUT_S, Actor, ActorState, Envelope
from ._effects import EffectScope
from ._errors import ActorClosed, ActorStopped, AskTimedOut, NotServing

M = TypeVar("M")
R = TypeVar("R")
log = logging.getLogger("maia.actors")


class Behaviour(Protocol[M]):
    """An actor's behaviour that sees its queued messages together and owns effects."""

    def attach(self, scope: EffectScope) -> None: ...

    async def handle_batch(self, envelopes: list[Envelope[M]]) -> None: ...


Spawn = Callable[[str], Awaitable[Callable[[M], Awaitable[R]] | Behaviour[M]]]


@attrs.frozen
class RegistryStatistics:
    name: str
    live: int
    spawning: int
    passivating: int
    spawned: int
    passivated_idle: int
    passivated_lru: int
    crashed: int
    restarted: int


class ActorRegistry(Generic[M, R]):
    """Actors by aggregate ID. `await nursery.start(registry.serve)` before use.

    `spawn(aggregate_id)` rehydrates an aggregate (reading storage) and returns its message
    handler; it runs once per incarnation, before the actor takes any message.
    """

    def __init__(
        self,
        name: str,
        spawn: Spawn[M, R],
        *,
        idle_s: float = 300.0,
        max_live: int = 100_000,
        capacity: int = 64,
        spawn_timeout_s: float = 30.0,
        policy: RestartPolicy | None = None,
        restart_message: Callable[[], M] | None = None,
        monotonic_ms: Callable[[], int] | None = None,
    ) -> None:
        if max_live < 1 or not idle_s > 0:
            raise ValueError("max_live must be at least 1 and idle_s positive")
        self.name = name
        self._spawn = spawn
        self._idle_s = idle_s
        self._max_live = max_live
        self._capacity = capacity
        self._spawn_timeout_s = spawn_timeout_s
        self._live: dict[str, Actor[M, R]] = {}  # least recently used first
        self._spawning: dict[str, trio.Event] = {}
        self._stopping: dict[str, Actor[M, R]] = {}
        self._nursery: trio.Nursery | None = None
        self._spawned = 0
        self._idle = 0
        self._lru = 0
        self._crashed = 0
        self._restarted = 0
        self._policy = policy or RestartPolicy()
        self._restart_message = restart_message
        self._now_ms = monotonic_ms or (lambda: int(trio.current_time() * 1000))
        self._crashes: dict[str, collections.deque[int]] = {}  # recent crash times per ID
        self._scopes: dict[str, EffectScope] = {}

    async def serve(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Run the actors and the idle sweep until cancelled (actors are then cancelled too,
        failing their pending asks)."""
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            task_status.started()
            try:
                await self._sweep_forever()
            finally:
                self._nursery = None

    async def _sweep_forever(self) -> None:
        period = self._idle_s / 4 if math.isfinite(self._idle_s) else math.inf
        while True:
            await trio.sleep(period)
            self.passivate_idle()

    def passivate_idle(self, older_than_s: float | None = None) -> int:
        """Passivate every actor idle for `idle_s` (or `older_than_s`) with an empty mailbox;
        returns how many. The sweep calls it every `idle_s / 4`."""
        idle_s = self._idle_s if older_than_s is None else older_than_s
        cutoff = trio.current_time() - idle_s
        idle = []
        for aggregate_id, actor in self._live.items():
            if actor.last_active > cutoff:
                break  # LRU order: the rest were touched more recently
            if actor.depth == 0 and actor.vetoes == 0:  # live effects veto passivation
                idle.append(aggregate_id)
        for aggregate_id in idle:
            self._passivate(aggregate_id)
        self._idle += len(idle)
        return len(idle)

    def _passivate(self, aggregate_id: str) -> None:
        actor = self._live.pop(aggregate_id)
        self._stopping[aggregate_id] = actor
        actor.close(drain=True)

    async def get(self, aggregate_id: str) -> Actor[M, R]:
        """The live actor for `aggregate_id`, spawning (rehydrating) it if none is live.

        Raises what `spawn` raises, `deadline_exceeded` when spawning takes longer than
        `spawn_timeout_s`, `unavailable` when the registry is not serving.
        """
        while True:
            actor = self._live.get(aggregate_id)
            if actor is not None and actor.state is not ActorState.STOPPED:
                del self._live[aggregate_id]  # touch: move to the recent end
                self._live[aggregate_id] = actor
                actor.last_active = trio.current_time()
                return actor
            spawning = self._spawning.get(aggregate_id)
            if spawning is not None:
                await spawning.wait()
                continue
            stopping = self._stopping.get(aggregate_id)
            if stopping is not None:
                await stopping.wait_stopped()
                self._stopping.pop(aggregate_id, None)
                continue
            return await self._spawn_one(aggregate_id)

    async def _spawn_one(self, aggregate_id: str) -> Actor[M, R]:
        nursery = self._nursery
        if nursery is None:
            raise NotServing(self.name)
        done = self._spawning[aggregate_id] = trio.Event()  # before any await: no twin
        try:
            while len(self._live) >= self._max_live:
                victim = next((i for i, a in self._live.items() if a.vetoes == 0), None)
                if victim is None:
                    break  # every live actor holds effects: go over the limit, not under
                self._passivate(victim)
                self._lru += 1
            with trio.move_on_after(self._spawn_timeout_s) as scope:
                made = await self._spawn(aggregate_id)
            if scope.cancelled_caught:
                ms = round(self._spawn_timeout_s * 1000)
                raise AskTimedOut(f"{self.name}/{aggregate_id}", ms, "spawn")
            name = f"{self.name}/{aggregate_id}"
            actor: Actor[M, R]
            if callable(made):
                actor = Actor(name, made, capacity=self._capacity)
            else:
                actor = Actor(name, batch=made.handle_batch, capacity=self._capacity)
                effects = self._scopes[aggregate_id] = EffectScope(actor, nursery)
                made.attach(effects)
            self._live[aggregate_id] = actor
            self._spawned += 1
            nursery.start_soon(self._run, aggregate_id, actor)
            return actor
        finally:
            del self._spawning[aggregate_id]
            done.set()

    async def _run(self, aggregate_id: str, actor: Actor[M, R]) -> None:
        crashed = False
        try:
            await actor.serve()
        except Exception:
            crashed = True
            self._crashed += 1  # its asks already failed
            log.exception("actor %s crashed", actor.name)
        finally:
            scope = self._scopes.get(aggregate_id)
            if scope is not None and self._live.get(aggregate_id) in (actor, None):
                del self._scopes[aggregate_id]
                scope.close()
            if self._live.get(aggregate_id) is actor:
                del self._live[aggregate_id]
            if self._stopping.get(aggregate_id) is actor:
                del self._stopping[aggregate_id]
        if crashed and self._nursery is not None:
            self._after_crash(aggregate_id)

    def _after_crash(self, aggregate_id: str) -> None:
        """Restart from storage at once, unless it crashed too often lately."""
        now = self._now_ms()
        times = self._crashes.setdefault(aggregate_id, collections.deque())
        times.append(now)
        while times and times[0] < now - self._policy.period_ms:
            times.popleft()
        if len(times) > self._policy.intensity:
            log.error("actor %s/%s crashed %d times within %d ms: not restarted until its next"
                      " message", self.name, aggregate_id, len(times),
                      self._policy.period_ms)  # fmt: skip
            return
        assert self._nursery is not None
        self._nursery.start_soon(self._restart, aggregate_id)

    async def _restart(self, aggregate_id: str) -> None:
        try:
            actor = await self.get(aggregate_id)
            self._restarted += 1
            if self._restart_message is not None:
                await actor.tell(self._restart_message())
        except (MaiaError, ActorClosed, ActorStopped, NotServing, AskTimedOut):
            log.warning("actor %s/%s could not be restarted now; its next message will",
                        self.name, aggregate_id, exc_info=True)  # fmt: skip

    async def tell(self, aggregate_id: str, message: M) -> None:
        """Deliver `message` to the aggregate's actor, spawning it if needed.

        Raises `ActorOverloaded` when its mailbox stays full, and what `get` raises.
        """
        for _ in range(3):
            actor = await self.get(aggregate_id)
            try:
                await actor.tell(message)
                return
            except ActorClosed:
                continue  # refused while passivating: not delivered, so the next incarnation
        raise ActorStopped(f"{self.name}/{aggregate_id}", "kept stopping")

    async def ask(
        self, aggregate_id: str, message: M, *, within: float = DEFAULT_ASK_TIMEOUT_S
    ) -> R:
        """Ask the aggregate's actor, spawning it if needed. Raises what `Actor.ask` raises."""
        for _ in range(3):
            actor = await self.get(aggregate_id)
            try:
                return await actor.ask(message, within=within)
            except ActorClosed:
                continue
        raise ActorStopped(f"{self.name}/{aggregate_id}", "kept stopping")

    def statistics(self) -> RegistryStatistics:
        return RegistryStatistics(
            name=self.name,
            live=len(self._live),
            spawning=len(self._spawning),
            passivating=len(self._stopping),
            spawned=self._spawned,
            passivated_idle=self._idle,
            passivated_lru=self._lru,
            crashed=self._crashed,
            restarted=self._restarted,
        )

    def is_live(self, aggregate_id: str) -> bool:
        return aggregate_id in self._live

    def live_actors(self) -> list[Actor[M, R]]:
        """The live actors, least recently used first (for node.status mailboxes)."""
        return list(self._live.values())
