"""Per-aggregate registries under MockClock: get-or-spawn races, passivation, rehydration."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import pytest
import trio
import trio.testing

from actors import ActorError, ActorRegistry, ActorStopped, NotServing, to_wire
from maia.protocol import MaiaError


class Aggregates:
    """A stand-in store of counters: spawning reads one (slowly), handlers add to it."""

    def __init__(self) -> None:
        self.saved: dict[str, int] = {}
        self.spawns: list[str] = []
        self.gate: trio.Event | None = None  # when set, handlers wait for it

    async def spawn(self, aggregate_id: str) -> Callable[[int], Awaitable[int]]:
        self.spawns.append(aggregate_id)
        await trio.sleep(0.5)  # rehydration takes a while: the race window is wide open
        count = self.saved.get(aggregate_id, 0)

        async def handle(delta: int) -> int:
            nonlocal count
            if self.gate is not None:
                await self.gate.wait()
            count += delta
            self.saved[aggregate_id] = count  # write-through, as a real actor persists
            return count

        return handle


async def test_hundred_concurrent_first_messages_one_actor(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """100 concurrent first messages to one ID spawn exactly one actor that sees all 100."""
    store = Aggregates()
    registry: ActorRegistry[int, int] = ActorRegistry("counter", store.spawn)
    answers: list[int] = []

    async def send() -> None:
        answers.append(await registry.ask("c1", 1))

    async with trio.open_nursery() as nursery:
        await nursery.start(registry.serve)
        async with trio.open_nursery() as senders:
            for _ in range(100):
                senders.start_soon(send)
        assert store.spawns == ["c1"]
        assert sorted(answers) == list(range(1, 101))
        assert registry.statistics().live == 1
        nursery.cancel_scope.cancel()


async def test_idle_passivation_and_rehydration(autojump_clock: trio.testing.MockClock) -> None:
    """An actor idle past idle_s is passivated; the next message rehydrates its saved state."""
    store = Aggregates()
    registry: ActorRegistry[int, int] = ActorRegistry("counter", store.spawn, idle_s=60)
    async with trio.open_nursery() as nursery:
        await nursery.start(registry.serve)
        assert await registry.ask("c1", 5) == 5
        await trio.sleep(30)
        assert await registry.ask("c1", 1) == 6  # activity restarts the idle clock
        await trio.sleep(50)
        assert registry.is_live("c1")
        await trio.sleep(40)  # > 60 s idle, and a sweep (every 15 s) has run
        assert not registry.is_live("c1")
        assert registry.statistics().passivated_idle == 1
        assert await registry.ask("c1", 1) == 7  # rehydrated from the saved count
        assert store.spawns == ["c1", "c1"]
        nursery.cancel_scope.cancel()


async def test_lru_eviction(autojump_clock: trio.testing.MockClock) -> None:
    """Beyond max_live, the least recently used actor is passivated (after draining)."""
    store = Aggregates()
    registry: ActorRegistry[int, int] = ActorRegistry("counter", store.spawn, max_live=2)
    async with trio.open_nursery() as nursery:
        await nursery.start(registry.serve)
        await registry.ask("a", 1)
        await registry.ask("b", 1)
        await registry.ask("a", 1)  # a is now more recent than b
        await registry.ask("c", 1)  # evicts b
        await trio.testing.wait_all_tasks_blocked()
        assert [registry.is_live(x) for x in "abc"] == [True, False, True]
        assert registry.statistics().passivated_lru == 1
        assert await registry.ask("b", 1) == 2  # rehydrated; evicts a
        assert not registry.is_live("a")
        nursery.cancel_scope.cancel()


async def test_message_during_passivation_waits_for_stop(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """A message arriving while its actor drains waits for it to stop, then goes to a new one."""
    store = Aggregates()
    registry: ActorRegistry[int, int] = ActorRegistry("counter", store.spawn, max_live=1)

    async with trio.open_nursery() as nursery:
        await nursery.start(registry.serve)
        await registry.ask("a", 1)
        gate = store.gate = trio.Event()
        nursery.start_soon(registry.tell, "a", 10)  # queued in the old incarnation
        await trio.testing.wait_all_tasks_blocked()
        nursery.start_soon(registry.ask, "b", 1)  # evicts a while it holds a message
        await trio.testing.wait_all_tasks_blocked()
        answers: list[int] = []

        async def late() -> None:
            answers.append(await registry.ask("a", 100))

        nursery.start_soon(late)
        await trio.testing.wait_all_tasks_blocked()
        assert answers == []
        gate.set()
        await trio.sleep(1)
        assert answers == [111]  # the drained 10 was saved before the new actor loaded
        nursery.cancel_scope.cancel()


async def test_crashed_actor_rehydrates(autojump_clock: trio.testing.MockClock) -> None:
    """A crashing handler fails its asker; the registry survives and the next message respawns."""
    spawns = 0

    async def spawn(aggregate_id: str) -> Callable[[int], Awaitable[int]]:
        nonlocal spawns
        spawns += 1

        async def handle(value: int) -> int:
            if value < 0:
                raise RuntimeError("bug")
            return value

        return handle

    registry: ActorRegistry[int, int] = ActorRegistry("x", spawn)
    async with trio.open_nursery() as nursery:
        await nursery.start(registry.serve)
        with pytest.raises(ActorStopped):
            await registry.ask("a", -1)
        await trio.testing.wait_all_tasks_blocked()
        assert registry.statistics().crashed == 1
        assert await registry.ask("a", 3) == 3
        assert spawns == 2
        nursery.cancel_scope.cancel()


async def test_spawn_failure_and_timeout(autojump_clock: trio.testing.MockClock) -> None:
    """A spawn that raises reaches the caller; one that hangs is `deadline_exceeded`."""

    async def spawn(aggregate_id: str) -> Callable[[int], Awaitable[int]]:
        if aggregate_id == "missing":
            raise MaiaError("resource_not_found", "no such thing", {"resource": "x", "id": "m"})
        await trio.sleep_forever()
        raise AssertionError("unreachable")

    registry: ActorRegistry[int, int] = ActorRegistry("x", spawn, spawn_timeout_s=5)
    async with trio.open_nursery() as nursery:
        await nursery.start(registry.serve)
        codes = []
        for aggregate_id in ("missing", "hang"):
            with pytest.raises((MaiaError, ActorError)) as info:
                await registry.tell(aggregate_id, 1)
            error = info.value
            wire = error if isinstance(error, MaiaError) else to_wire(error)
            assert wire is not None
            codes.append(wire.code)
        assert codes == ["resource_not_found", "deadline_exceeded"]
        assert registry.statistics().spawning == 0
        nursery.cancel_scope.cancel()
    with pytest.raises(NotServing):
        await registry.tell("late", 1)
