"""The actor runtime: tell/ask, bounded mailbox, deadlines, refusals, crashes and stop."""

from __future__ import annotations

import pytest
import trio
import trio.testing
from hypothesis import given, settings
from hypothesis import strategies as st

from actors import Actor, ActorClosed, ActorError, ActorOverloaded, ActorState, AskTimedOut
from maia.protocol import MaiaError


class Recorder:
    """A handler that records messages, answers doubled ints and refuses negative ones."""

    def __init__(self) -> None:
        self.seen: list[int] = []
        self.gate: trio.Event | None = None

    async def __call__(self, message: int) -> int:
        if self.gate is not None:
            await self.gate.wait()
        if message < 0:
            raise MaiaError("invalid_request", "negative", {"detail": "negative"})
        if message == 666:
            raise RuntimeError("boom")
        self.seen.append(message)
        return message * 2


async def test_tell_and_ask_in_order() -> None:
    """Told and asked messages are handled once each, in send order, and ask gets the answer."""
    rec = Recorder()
    actor: Actor[int, int] = Actor("a", rec)
    async with trio.open_nursery() as nursery:
        await nursery.start(actor.serve)
        for i in range(100):
            await actor.tell(i)
        assert await actor.ask(7) == 14
        assert rec.seen == [*range(100), 7]
        stats = actor.statistics()
        assert stats.processed == 101
        assert stats.depth == 0
        actor.close()
    assert actor.state is ActorState.STOPPED


async def test_refusal_goes_to_asker_and_actor_survives() -> None:
    """A MaiaError from the handler reaches the asker; the actor keeps serving."""
    actor: Actor[int, int] = Actor("a", Recorder())
    async with trio.open_nursery() as nursery:
        await nursery.start(actor.serve)
        with pytest.raises(MaiaError) as info:
            await actor.ask(-1)
        assert info.value.code == "invalid_request"
        assert await actor.ask(2) == 4
        assert actor.statistics().failures == 1
        actor.close()


async def test_full_mailbox_waits_then_overloaded(autojump_clock: trio.testing.MockClock) -> None:
    """A sender facing a full mailbox waits its bound, then gets `overloaded`; nothing dropped."""
    rec = Recorder()
    rec.gate = trio.Event()
    actor: Actor[int, int] = Actor("a", rec, capacity=2, send_timeout=1.0)
    async with trio.open_nursery() as nursery:
        await nursery.start(actor.serve)
        await actor.tell(1)  # taken by the actor, blocked on the gate
        await trio.testing.wait_all_tasks_blocked()
        await actor.tell(2)
        await actor.tell(3)
        with pytest.raises(ActorOverloaded):
            actor.tell_nowait(4)
        start = trio.current_time()
        with pytest.raises(ActorOverloaded):
            await actor.tell(4)
        assert trio.current_time() - start == pytest.approx(1.0)
        rec.gate.set()
        await actor.tell(5)  # space frees up once the actor drains
        assert await actor.ask(6) == 12
        assert rec.seen == [1, 2, 3, 5, 6]
        actor.close()


async def test_waiting_sender_gets_space(autojump_clock: trio.testing.MockClock) -> None:
    """A sender parked on a full mailbox is admitted once the actor drains a batch."""
    rec = Recorder()
    rec.gate = trio.Event()
    actor: Actor[int, int] = Actor("a", rec, capacity=1, send_timeout=10.0)
    async with trio.open_nursery() as nursery:
        await nursery.start(actor.serve)
        await actor.tell(1)
        await trio.testing.wait_all_tasks_blocked()
        await actor.tell(2)
        nursery.start_soon(actor.tell, 3)
        await trio.testing.wait_all_tasks_blocked()
        assert actor.statistics().waiting_senders == 1
        rec.gate.set()
        assert await actor.ask(4) == 8
        assert rec.seen == [1, 2, 3, 4]
        actor.close()


async def test_ask_deadline(autojump_clock: trio.testing.MockClock) -> None:
    """An ask past its deadline fails `deadline_exceeded` at the deadline; the actor goes on."""
    rec = Recorder()
    rec.gate = trio.Event()
    actor: Actor[int, int] = Actor("a", rec)
    async with trio.open_nursery() as nursery:
        await nursery.start(actor.serve)
        start = trio.current_time()
        with pytest.raises(AskTimedOut) as info:
            await actor.ask(1, within=2.5)
        assert info.value.to_wire().code == "deadline_exceeded"
        assert trio.current_time() - start == pytest.approx(2.5)
        rec.gate.set()
        assert await actor.ask(3) == 6  # the late answer to 1 went nowhere, harmlessly
        assert rec.seen == [1, 3]
        actor.close()


async def test_pending_asks_fail_when_stopped(autojump_clock: trio.testing.MockClock) -> None:
    """Stopping an actor fails every pending ask with `unavailable`; later sends are refused."""
    rec = Recorder()
    rec.gate = trio.Event()
    actor: Actor[int, int] = Actor("a", rec)
    errors: list[str] = []

    async def asker(value: int) -> None:
        try:
            await actor.ask(value, within=100)
        except (MaiaError, ActorError) as exc:
            errors.append(exc.code)

    async with trio.open_nursery() as outer, trio.open_nursery() as inner:
        await inner.start(actor.serve)
        for i in range(5):
            outer.start_soon(asker, i)
        await trio.testing.wait_all_tasks_blocked()
        inner.cancel_scope.cancel()
    assert errors == ["unavailable"] * 5
    with pytest.raises(ActorClosed):
        await actor.tell(9)


async def test_close_without_drain_fails_queued(autojump_clock: trio.testing.MockClock) -> None:
    """`close(drain=False)` fails queued asks, counts queued tells as dropped, then stops."""
    rec = Recorder()
    rec.gate = trio.Event()
    actor: Actor[int, int] = Actor("a", rec)
    codes: list[str] = []

    async def asker() -> None:
        try:
            await actor.ask(2)
        except (MaiaError, ActorError) as exc:
            codes.append(exc.code)

    async with trio.open_nursery() as nursery:
        await nursery.start(actor.serve)
        await actor.tell(1)
        await trio.testing.wait_all_tasks_blocked()
        await actor.tell(3)
        nursery.start_soon(asker)
        await trio.testing.wait_all_tasks_blocked()
        actor.close(drain=False)
        rec.gate.set()
        await actor.wait_stopped()
    assert codes == ["unavailable"]
    assert rec.seen == [1]
    assert actor.statistics().dropped == 1


async def test_close_with_drain_handles_queued() -> None:
    """`close()` (drain) handles everything already queued before stopping."""
    rec = Recorder()
    actor: Actor[int, int] = Actor("a", rec)
    async with trio.open_nursery() as nursery:
        for i in range(10):
            actor.tell_nowait(i)  # queued before the actor starts
        await nursery.start(actor.serve)
        actor.close()
        await actor.wait_stopped()
    assert rec.seen == list(range(10))


async def test_crash_fails_asker_and_propagates() -> None:
    """A non-MaiaError exception crashes the actor: the asker gets `unavailable`, the rest too."""
    actor: Actor[int, int] = Actor("a", Recorder())
    codes: list[str] = []

    async def asker(value: int) -> None:
        try:
            await actor.ask(value)
        except (MaiaError, ActorError) as exc:
            codes.append(exc.code)

    with pytest.RaisesGroup(RuntimeError):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(asker, 666)
            await trio.testing.wait_all_tasks_blocked()
            nursery.start_soon(asker, 1)
            await trio.testing.wait_all_tasks_blocked()
            nursery.start_soon(actor.serve)
    assert codes == ["unavailable", "unavailable"]
    assert actor.statistics().failures == 1


OPS = st.lists(
    st.tuples(
        st.sampled_from(["tell", "tell_nowait", "ask", "wait", "close", "close_now"]),
        st.integers(0, 3),
    ),
    max_size=40,
)


@settings(max_examples=60)
@given(ops=OPS, capacity=st.integers(1, 4), slow=st.booleans())
def test_nothing_lost_or_stuck(ops: list[tuple[str, int]], capacity: int, slow: bool) -> None:
    """Any mix of sends and stops: each accepted message is handled or counted dropped, each
    refused one raised, and every ask ends (answer or typed error) by its deadline."""
    handled: list[int] = []
    outcomes: dict[int, str] = {}

    async def handler(message: int) -> int:
        if slow:
            await trio.sleep(0.1)
        handled.append(message)
        return message

    async def run() -> None:
        actor: Actor[int, int] = Actor("p", handler, capacity=capacity, send_timeout=0.5)

        async def send(kind: str, message: int) -> None:
            try:
                if kind == "tell":
                    await actor.tell(message)
                elif kind == "tell_nowait":
                    actor.tell_nowait(message)
                else:
                    await actor.ask(message, within=1.0)
                    outcomes[message] = "answered"
                    return
                outcomes[message] = "accepted"
            except (MaiaError, ActorError) as exc:
                outcomes[message] = exc.code

        with trio.fail_after(60):
            async with trio.open_nursery() as nursery:
                await nursery.start(actor.serve)
                for index, (kind, pause) in enumerate(ops):
                    if kind == "wait":
                        await trio.sleep(pause * 0.05)
                    elif kind == "close":
                        actor.close()
                    elif kind == "close_now":
                        actor.close(drain=False)
                    else:
                        nursery.start_soon(send, kind, index)
                        if pause:
                            await trio.testing.wait_all_tasks_blocked()
                await trio.sleep(5)
                actor.close()
        stats = actor.statistics()
        accepted = [m for m, o in outcomes.items() if o in ("accepted", "answered")]
        assert set(handled) <= set(accepted)
        told = [m for m, o in outcomes.items() if o == "accepted"]
        assert len(told) - len([m for m in told if m in handled]) == stats.dropped
        assert all(o in ("accepted", "answered", "overloaded", "unavailable",
                         "deadline_exceeded") for o in outcomes.values())  # fmt: skip
        assert len(outcomes) == sum(1 for kind, _ in ops if kind in ("tell", "tell_nowait", "ask"))

    trio.run(run, clock=trio.testing.MockClock(autojump_threshold=0))


async def test_a_batch_handler_sees_every_queued_message_at_once() -> None:
    """With `batch=`, the actor hands over all queued envelopes together; answers go to
    each asker, and an envelope the handler leaves unanswered fails `ActorStopped`."""
    from actors import ActorStopped, Envelope

    seen: list[list[int]] = []

    async def batch(envelopes: list[Envelope[int]]) -> None:
        seen.append([e.message for e in envelopes])
        for envelope in envelopes:
            if envelope.message != 13:
                envelope.resolve(envelope.message * 10)

    actor: Actor[int, int] = Actor("b", batch=batch)
    results: dict[int, object] = {}

    async def ask(n: int) -> None:
        try:
            results[n] = await actor.ask(n)
        except ActorStopped as error:
            results[n] = type(error)

    async with trio.open_nursery() as nursery:
        for n in (1, 2, 13):  # all queued before the actor runs
            nursery.start_soon(ask, n)
        await trio.testing.wait_all_tasks_blocked()
        await nursery.start(actor.serve)
        await trio.testing.wait_all_tasks_blocked()
        actor.close()
    assert [sorted(b) for b in seen] == [[1, 2, 13]]  # one batch (trio orders the asks)
    assert results == {1: 10, 2: 20, 13: ActorStopped}
