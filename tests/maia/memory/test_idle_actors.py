"""What an idle or passivated actor keeps: nothing of its last message, no behaviour once
stopped (freed by reference counting, with the collector off), and `passivate_now`."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Awaitable, Callable, Iterator

import pytest
import trio
import trio.testing

from actors import Actor, ActorRegistry, EffectScope, Envelope


class Note:
    """A message whose lifetime a test can watch (a weak reference to it)."""

    def __init__(self, text: str) -> None:
        self.text = text


@pytest.fixture
def collector_off() -> Iterator[None]:
    """The cyclic collector is off: what dies here dies by its reference count."""
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


async def _echo(note: Note) -> str:
    return note.text


async def _echo_batch(envelopes: list[Envelope[Note]]) -> None:
    for envelope in envelopes:
        envelope.resolve(envelope.message.text)


@pytest.mark.parametrize("kind", ["handler", "batch"])
async def test_a_parked_actor_holds_nothing_of_its_last_message(
    kind: str, collector_off: None
) -> None:
    """After answering an ask, an actor parked for its next message no longer references
    the message (nor its reply, which held the asker's task), with either kind of handler."""
    actor: Actor[Note, str] = (
        Actor("echo", _echo) if kind == "handler" else Actor("echo", batch=_echo_batch)
    )
    async with trio.open_nursery() as nursery:
        await nursery.start(actor.serve)
        note = Note("hello")
        seen = weakref.ref(note)
        assert await actor.ask(note, within=5) == "hello"
        del note
        await trio.testing.wait_all_tasks_blocked()  # the actor is parked again
        assert seen() is None
        assert actor.statistics().processed == 1
        actor.close()


class Behaviour:
    """A behaviour that keeps its effect scope, as the Session kinds do (a cycle through
    the actor, which holds the behaviour's bound `handle_batch`)."""

    def __init__(self) -> None:
        self.scope: EffectScope | None = None

    def attach(self, scope: EffectScope) -> None:
        self.scope = scope

    async def handle_batch(self, envelopes: list[Envelope[str]]) -> None:
        for envelope in envelopes:
            envelope.resolve(envelope.message.upper())


def _spawner(made: list[weakref.ref[Behaviour]]) -> Callable[[str], Awaitable[Behaviour]]:
    async def spawn(_: str) -> Behaviour:
        behaviour = Behaviour()
        made.append(weakref.ref(behaviour))
        return behaviour

    return spawn


async def test_a_passivated_actor_leaves_no_object_behind(collector_off: None) -> None:
    """An actor passivated at once (`passivate_now`) or by the idle sweep is no longer in
    the registry, and its behaviour (in a cycle with its effect scope while live) is freed
    without the cyclic collector."""
    made: list[weakref.ref[Behaviour]] = []
    registry: ActorRegistry[str, str] = ActorRegistry("upper", _spawner(made), idle_s=60)
    async with trio.open_nursery() as nursery:
        await nursery.start(registry.serve)
        assert await registry.ask("a", "x") == "X"
        assert await registry.ask("b", "y") == "Y"
        assert registry.passivate_now("a")
        assert registry.passivate_idle(older_than_s=0.0) == 1  # "b"
        await trio.testing.wait_all_tasks_blocked()
        assert registry.statistics().live == 0
        assert registry.statistics().passivating == 0
        assert [ref() for ref in made] == [None, None]
        assert registry.statistics().passivated_idle == 2
        nursery.cancel_scope.cancel()


async def test_passivate_now_leaves_a_busy_or_unknown_actor_alone() -> None:
    """`passivate_now` refuses (False, nothing changed) an unknown ID, an actor with a
    message in hand or queued and one holding live effects; it passivates the same actor
    once idle."""
    gate = trio.Event()

    async def spawn(_: str) -> Callable[[str], Awaitable[str]]:
        async def handle(message: str) -> str:
            await gate.wait()
            return message

        return handle

    registry: ActorRegistry[str, str] = ActorRegistry("gated", spawn, idle_s=60)
    async with trio.open_nursery() as nursery:
        await nursery.start(registry.serve)
        assert not registry.passivate_now("nobody")
        await registry.tell("a", "first")
        await trio.testing.wait_all_tasks_blocked()  # "first" in hand, nothing queued
        assert not registry.passivate_now("a")
        await registry.tell("a", "second")
        assert not registry.passivate_now("a")
        gate.set()
        await trio.testing.wait_all_tasks_blocked()
        (actor,) = registry.live_actors()
        actor.vetoes += 1  # a live effect
        assert not registry.passivate_now("a")
        assert registry.is_live("a")
        actor.vetoes -= 1
        assert registry.passivate_now("a")
        assert not registry.is_live("a")
        nursery.cancel_scope.cancel()


async def test_messages_sent_while_an_actor_passivates_keep_their_order() -> None:
    """Messages sent one after another while the aggregate's actor is still passivating
    (its last message in hand) queue into the next incarnation in the order sent, and that
    one rehydrates only once the old one has stopped."""
    gate = trio.Event()
    seen: list[str] = []
    spawned_after: list[int] = []  # how many messages were handled when each spawn ran

    async def spawn(_: str) -> Callable[[str], Awaitable[str]]:
        spawned_after.append(len(seen))

        async def handle(message: str) -> str:
            if message == "hold":
                await gate.wait()
            seen.append(message)
            return message

        return handle

    registry: ActorRegistry[str, str] = ActorRegistry("ordered", spawn, idle_s=60)
    async with trio.open_nursery() as nursery:
        await nursery.start(registry.serve)
        await registry.tell("a", "hold")
        await trio.testing.wait_all_tasks_blocked()
        assert registry.passivate_idle(older_than_s=0.0) == 1  # it stops after "hold"
        async with trio.open_nursery() as senders:
            for n in range(20):
                senders.start_soon(registry.tell, "a", f"m{n}")
                await trio.lowlevel.checkpoint()  # sent in this order
            await trio.testing.wait_all_tasks_blocked()
            assert seen == []
            gate.set()
        await trio.testing.wait_all_tasks_blocked()
        assert seen == ["hold"] + [f"m{n}" for n in range(20)]
        assert spawned_after == [0, 1]  # the second incarnation began after "hold" ended
        nursery.cancel_scope.cancel()
