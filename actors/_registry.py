"""Per-aggregate registries: one live actor per aggregate ID, spawned on demand, passivated
when idle or when too many are live, rehydrated from storage on the next message.

Get-or-spawn is race-free without a lock: the first caller for an ID registers the actor
(not yet served) before its first await, so every later caller queues into it, in arrival
order, instead of spawning a twin. An
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
import contextlib
import logging
import math
from collections.abc import Awaitable, Callable
from typing import Generic, Protocol, TypeVar

import attrs
import trio

from maia.core import MaiaError
from supervision import RestartPolicy

from ._actor import DEFAULT_ASK_TIMEOUT_S, Actor, ActorState, Envelope
from ._effects import EffectScope
from ._errors import ActorClosed, ActorError, ActorStopped, AskTimedOut, NotServing

M = TypeVar("M")
R = TypeVar("R")
log = logging.getLogger("maia.actors")


class Behaviour(Protocol[M]):
    """An actor's behaviour that sees its queued messages together and owns effects."""

    def attach(self, scope: EffectScope) -> None: ...

    async def handle_batch(self, envelopes: list[Envelope[M]]) -> None: ...


Spawn = Callable[[str], Awaitable[Callable[[M], Awaitable[R]] | Behaviour[M]]]


class _Spawn:
    """One rehydration in progress: its end, and its error."""

    __slots__ = ("_done", "_event", "error")

    def __init__(self) -> None:
        self._event: trio.Event | None = None  # made only when someone waits
        self._done = False
        self.error: BaseException | None = None

    async def wait(self) -> None:
        if self._done:
            return
        if self._event is None:
            self._event = trio.Event()
        await self._event.wait()

    def finish(self) -> None:
        self._done = True
        if self._event is not None:
            self._event.set()


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
        self._spawning: dict[Actor[M, R], _Spawn] = {}  # actors being rehydrated
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
        self._scopes: dict[Actor[M, R], EffectScope] = {}  # per incarnation

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
            if actor.depth == 0 and actor.vetoes == 0 and actor.state is ActorState.RUNNING:
                # live effects veto passivation; one still rehydrating is not idle
                idle.append(aggregate_id)
        for aggregate_id in idle:
            self._passivate(aggregate_id)
        self._idle += len(idle)
        return len(idle)

    def passivate_now(self, aggregate_id: str) -> bool:
        """Passivate the aggregate's actor at once if it is live and idle (parked for its
        next message, no live effects); returns whether it did. For an actor its kind knows
        will not be needed soon (a Session just created), so that a burst of them does not
        stay live for the idle bound."""
        actor = self._live.get(aggregate_id)
        if actor is None or not actor.parked or actor.vetoes:
            return False
        self._passivate(aggregate_id)
        self._idle += 1
        return True

    def _passivate(self, aggregate_id: str) -> None:
        actor = self._live.pop(aggregate_id)
        self._stopping[aggregate_id] = actor
        actor.close(drain=True)

    async def get(self, aggregate_id: str) -> Actor[M, R]:
        """The live actor for `aggregate_id`, rehydrated. Raises what `spawn` raises,
        `AskTimedOut` when spawning takes longer than `spawn_timeout_s`, `NotServing` when
        the registry is not serving."""
        actor, mine = await self._obtain(aggregate_id)
        if mine:
            await self._complete(aggregate_id, actor)
        else:
            await self._spawned_or_raise(actor)
        return actor

    async def _obtain(self, aggregate_id: str) -> tuple[Actor[M, R], bool]:
        """The actor for `aggregate_id`, live or being rehydrated, and whether this caller
        must rehydrate it (`_complete`). The first caller for an ID registers it before any
        await, so every caller's message queues in arrival order and no twin is spawned. That
        holds while an earlier incarnation is still passivating too: the new one is
        registered at once (callers queue into it in order) and rehydrated once the old one
        has stopped (`_complete`)."""
        actor = self._live.get(aggregate_id)
        if actor is not None and actor.state is not ActorState.STOPPED:
            del self._live[aggregate_id]  # touch: move to the recent end
            self._live[aggregate_id] = actor
            actor.last_active = trio.current_time()
            return actor, False
        return self._register(aggregate_id), True

    def _register(self, aggregate_id: str) -> Actor[M, R]:
        if self._nursery is None:
            raise NotServing(self.name)
        while len(self._live) >= self._max_live:
            victim = next((i for i, a in self._live.items()
                           if a.vetoes == 0 and a.state is ActorState.RUNNING), None)  # fmt: skip
            if victim is None:
                break  # every live actor holds effects or rehydrates: go over, not under
            self._passivate(victim)
            self._lru += 1
        actor: Actor[M, R] = Actor(f"{self.name}/{aggregate_id}", capacity=self._capacity)
        actor.last_active = trio.current_time()
        self._live[aggregate_id] = actor
        self._spawning[actor] = _Spawn()
        return actor

    async def _spawned_or_raise(self, actor: Actor[M, R]) -> None:
        spawn = self._spawning.get(actor)
        if spawn is not None:
            await spawn.wait()
            if spawn.error is not None:
                raise spawn.error

    async def _complete(self, aggregate_id: str, actor: Actor[M, R]) -> None:
        """Rehydrate a registered actor (in the caller's task) and start serving it.
        Raises what the spawn raised; its queued asks fail with the same error."""
        spawn = self._spawning[actor]
        name = actor.name
        try:
            with trio.move_on_after(self._spawn_timeout_s) as scope:
                stopping = self._stopping.get(aggregate_id)
                if stopping is not None:  # its rows are the old incarnation's until it stops
                    await stopping.wait_stopped()
                made = await self._spawn(aggregate_id)
            if scope.cancelled_caught:
                raise AskTimedOut(name, round(self._spawn_timeout_s * 1000), "spawn")
        except BaseException as error:
            if self._live.get(aggregate_id) is actor:
                del self._live[aggregate_id]
            refusal = error if isinstance(error, MaiaError | ActorError) else ActorStopped(name)
            spawn.error = refusal
            actor.abandon(refusal)
            if isinstance(error, Exception) and not isinstance(error, MaiaError | ActorError):
                log.exception("spawning %s failed", name)
            raise
        finally:
            del self._spawning[actor]
            spawn.finish()
        nursery = self._nursery
        if nursery is None:
            actor.abandon(NotServing(self.name))
            raise NotServing(self.name)
        if callable(made):
            actor.bind(made)
        else:
            actor.bind(batch=made.handle_batch)
            effects = self._scopes[actor] = EffectScope(actor, nursery)
            made.attach(effects)
        self._spawned += 1
        nursery.start_soon(self._serve, aggregate_id, actor)

    async def _complete_quietly(self, aggregate_id: str, actor: Actor[M, R]) -> None:
        """`_complete` for an asker (which learns the error from its refused ask)."""
        with contextlib.suppress(Exception):  # handed to the queued asks, and logged if a bug
            await self._complete(aggregate_id, actor)

    async def _serve(self, aggregate_id: str, actor: Actor[M, R]) -> None:
        crashed = False
        try:
            await actor.serve()
        except Exception:
            crashed = True
            self._crashed += 1  # its asks already failed
            log.exception("actor %s crashed", actor.name)
        finally:
            scope = self._scopes.pop(actor, None)
            if scope is not None:
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
            actor, mine = await self._obtain(aggregate_id)
            try:
                await actor.tell(message)
            except ActorClosed:
                continue  # refused while passivating: not delivered, so the next incarnation
            if mine:  # rehydrate it here; a teller learns that it does not exist
                await self._complete(aggregate_id, actor)
            else:
                await self._spawned_or_raise(actor)
            return
        raise ActorStopped(f"{self.name}/{aggregate_id}", "kept stopping")

    async def ask(
        self, aggregate_id: str, message: M, *, within: float = DEFAULT_ASK_TIMEOUT_S
    ) -> R:
        """Ask the aggregate's actor, spawning it if needed. Raises what `Actor.ask` raises."""
        for _ in range(3):
            actor, mine = await self._obtain(aggregate_id)
            if mine:  # queue first (arrival order), rehydrate beside the wait for the answer
                assert self._nursery is not None
                self._nursery.start_soon(self._complete_quietly, aggregate_id, actor)
            try:
                return await actor.ask(message, within=within)  # a failed spawn refuses it
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
