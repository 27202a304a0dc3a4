"""An ask's deadline kept by the run's ask timer (`actors/_ask_timer.py`) answers as the cancel
scope it replaced did, on a MockClock: the asker gets `AskTimedOut` at its own bound, whatever
the other asks' bounds; an enclosing cancel scope that expires first (or at the same moment)
wins as the outer of two nested scopes did; an ask whose bound has already passed times out
even when the actor could answer at once; the late answer goes nowhere."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from actors import Actor, AskTimedOut
from actors._ask_timer import ask_timer


class Gated:
    """Answers doubled ints once `gate` is set; records what it handled."""

    def __init__(self) -> None:
        self.gate = trio.Event()
        self.seen: list[int] = []

    async def __call__(self, message: int) -> int:
        if message >= 100:  # these wait for the gate
            await self.gate.wait()
        self.seen.append(message)
        return message * 2


async def test_each_ask_times_out_at_its_own_bound(autojump_clock: trio.testing.MockClock) -> None:
    """Asks of 10 s, 2 s and 6 s made in that order (so the timer must wake earlier than it
    slept to) time out at 2, 6 and 10 s from their start, each with its own bound."""
    handler = Gated()
    actor: Actor[int, int] = Actor("a", handler)
    ended: dict[int, tuple[float, int]] = {}

    async def asker(value: int, within: float) -> None:
        start = trio.current_time()
        with pytest.raises(AskTimedOut) as info:
            await actor.ask(value, within=within)
        ended[value] = (trio.current_time() - start, info.value.details["ms"])

    async with trio.open_nursery() as nursery:
        await nursery.start(actor.serve)
        async with trio.open_nursery() as askers:
            for value, within in ((100, 10.0), (101, 2.0), (102, 6.0)):
                askers.start_soon(asker, value, within)
                await trio.testing.wait_all_tasks_blocked()
        assert {value: ms for value, (_, ms) in ended.items()} == {
            100: 10_000,
            101: 2_000,
            102: 6_000,
        }
        for value, within in ((100, 10.0), (101, 2.0), (102, 6.0)):
            assert ended[value][0] == pytest.approx(within)
        handler.gate.set()
        assert await actor.ask(3) == 6  # the late answers went nowhere, harmlessly
        assert handler.seen == [100, 101, 102, 3]
        actor.close()


@pytest.mark.parametrize("outer_s", [1.0, 5.0])
async def test_an_enclosing_deadline_first_or_equal_wins(
    autojump_clock: trio.testing.MockClock, outer_s: float
) -> None:
    """An enclosing scope expiring before the ask's 5 s (or with it) is what ends the wait:
    its Cancelled is caught by that scope, not turned into `AskTimedOut`; the timer then
    passes over the abandoned ask."""
    handler = Gated()
    actor: Actor[int, int] = Actor("a", handler)
    async with trio.open_nursery() as nursery:
        await nursery.start(actor.serve)
        start = trio.current_time()
        with trio.move_on_after(outer_s) as outer:
            await actor.ask(100, within=5.0)
        assert outer.cancelled_caught
        assert trio.current_time() - start == pytest.approx(outer_s)
        await trio.sleep(10)  # past the ask's own bound: nothing to wake
        handler.gate.set()
        assert await actor.ask(4) == 8
        actor.close()


async def test_an_ask_already_past_its_bound_times_out(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """`within=0`: the message is queued and handled, the asker times out (as a scope entered
    past its deadline cancelled at once), with no wait."""
    handler = Gated()
    actor: Actor[int, int] = Actor("a", handler)
    async with trio.open_nursery() as nursery:
        await nursery.start(actor.serve)
        start = trio.current_time()
        for _ in range(20):  # the idle actor could answer in the same round: it never wins
            with pytest.raises(AskTimedOut):
                await actor.ask(1, within=0)
        assert trio.current_time() == start
        assert await actor.ask(2) == 4
        assert handler.seen == [1] * 20 + [2]
        actor.close()


async def test_answered_asks_leave_the_heap(autojump_clock: trio.testing.MockClock) -> None:
    """Answered asks' entries are dropped as later asks come: the heap stays as short as
    the asks in flight, not as the asks of the last timeout's span."""
    actor: Actor[int, int] = Actor("a", Gated())
    async with trio.open_nursery() as nursery:
        await nursery.start(actor.serve)
        for value in range(1_000):
            assert await actor.ask(value % 100) == value % 100 * 2
        assert len(ask_timer()._heap) <= 1
        actor.close()
