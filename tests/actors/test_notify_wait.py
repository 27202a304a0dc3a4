"""A `Wakeup`'s bounded wait (`wait_until`, its deadline kept by the run's ask timer instead of
a cancel scope) answers as `with trio.move_on_at(deadline): await event.wait()` did, on a
MockClock: each waiter at its own deadline whatever the others' (the timer wakes that one
alone), every waiter when set first, an enclosing scope expiring first or at the same moment
wins with `Cancelled`, a past deadline or a set change is still a cancel point, and waiters
that time out or are cancelled leave nothing parked behind them."""

from __future__ import annotations

import math

import pytest
import trio
import trio.testing

from actors._notify import Notifier, Wakeup


async def test_each_waiter_times_out_at_its_own_deadline(
    autojump_clock: trio.testing.MockClock,
) -> None:
    change = Wakeup()
    ended: dict[float, tuple[float, bool]] = {}

    async def waiter(bound: float) -> None:
        start = trio.current_time()
        woken = await change.wait_until(start + bound)
        ended[bound] = (trio.current_time() - start, woken)

    async with trio.open_nursery() as nursery:
        for bound in (10.0, 2.0, 6.0):  # the timer must wake earlier than it slept to
            nursery.start_soon(waiter, bound)
            await trio.testing.wait_all_tasks_blocked()
    assert sorted(ended) == [2.0, 6.0, 10.0]
    for bound, (waited, woken) in ended.items():
        assert waited == pytest.approx(bound)
        assert woken is False
    assert not change._parked  # the timed-out waiters took their entries with them
    change.set()  # nobody is woken twice
    assert change.is_set()


async def test_set_wakes_every_waiter_before_its_deadline(
    autojump_clock: trio.testing.MockClock,
) -> None:
    change = Wakeup()
    woken: list[tuple[str, bool, float]] = []

    async def waiter(name: str, deadline: float) -> None:
        result = await change.wait_until(deadline)
        woken.append((name, result, trio.current_time()))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(waiter, "a", 5.0)
        nursery.start_soon(waiter, "b", math.inf)
        await trio.testing.wait_all_tasks_blocked()
        await trio.sleep(1.0)
        change.set()
    assert sorted(woken) == [("a", True, 1.0), ("b", True, 1.0)]
    # Long after: the stale heap entry wakes nobody.
    await trio.sleep(10.0)
    assert len(woken) == 2


async def test_set_already_and_past_deadline_are_still_cancel_points(
    autojump_clock: trio.testing.MockClock,
) -> None:
    change = Wakeup()
    assert await change.wait_until(trio.current_time()) is False  # past: at once, not set
    with trio.CancelScope() as scope:
        scope.cancel()
        with pytest.raises(trio.Cancelled):
            await change.wait_until(trio.current_time() - 1.0)
    change.set()
    assert await change.wait_until(trio.current_time() + 5.0) is True
    with trio.CancelScope() as scope:
        scope.cancel()
        with pytest.raises(trio.Cancelled):
            await change.wait_until(trio.current_time() + 5.0)
    assert trio.current_time() == 0.0


@pytest.mark.parametrize("outer", [2.0, 3.0])
async def test_an_enclosing_scope_expiring_first_or_together_wins(
    autojump_clock: trio.testing.MockClock, outer: float
) -> None:
    change = Wakeup()
    with trio.move_on_after(outer) as scope:
        await change.wait_until(3.0)
        pytest.fail("the enclosing scope's cancel should have landed")
    assert scope.cancelled_caught
    assert trio.current_time() == pytest.approx(outer)
    assert not change._parked
    change.set()  # the cancelled waiter is not rescheduled
    await trio.sleep(5.0)  # the timer's entry for 3.0 expires harmlessly


async def test_repeated_timeouts_on_one_unset_change_stay_bounded(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """A waiter that rereads every 200 ms on a change nobody sets (a long turn) parks and
    unparks 100 times: nothing accumulates, and the ask timer's heap stays short."""
    from actors._ask_timer import ask_timer

    notifier = Notifier()
    for _ in range(100):
        changed = notifier.subscribe("t-1")
        try:
            assert not await changed.wait_until(trio.current_time() + 0.2)
        finally:
            notifier.release("t-1", changed)
    assert not changed._parked
    assert len(ask_timer()._heap) <= 1
    assert trio.current_time() == pytest.approx(20.0)


async def test_notify_wakes_the_subscribed_waiter(autojump_clock: trio.testing.MockClock) -> None:
    notifier = Notifier()
    changed = notifier.subscribe("s-1")
    results: list[bool] = []

    async def waiter() -> None:
        results.append(await changed.wait_until(trio.current_time() + 4.0))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(waiter)
        await trio.testing.wait_all_tasks_blocked()
        notifier.notify("s-1")
    notifier.release("s-1", changed)
    assert results == [True]
    assert trio.current_time() == 0.0
    # Notifier.wait: the same bound, no scope.
    await notifier.wait("s-1", 1.5)
    assert trio.current_time() == pytest.approx(1.5)
