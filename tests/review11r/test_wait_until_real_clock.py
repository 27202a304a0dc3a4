"""`Wakeup.wait_until` (session 11: the ask timer instead of a cancel scope) under trio's real
clock: it times out no earlier than its deadline and answers False; an enclosing
cancellation raises Cancelled (also one due at the very deadline); a `set` after a
cancelled or timed-out wait wakes no one twice and leaves the other waiters woken; many
cancelled waits with a far deadline do not keep the next timed wait from timing out. No
timed assertion but 'not before the deadline' (a lower bound); generous upper bounds."""

from __future__ import annotations

import trio

from actors import Wakeup


async def test_timeout_cancel_and_set_under_the_real_clock() -> None:
    wakeup = Wakeup()
    start = trio.current_time()
    assert await wakeup.wait_until(start + 0.05) is False
    assert trio.current_time() >= start + 0.05

    cancelled = False
    with trio.move_on_after(0.02) as scope:  # an enclosing deadline before the wait's
        await wakeup.wait_until(trio.current_time() + 60)
    cancelled = scope.cancelled_caught
    assert cancelled

    deadline = trio.current_time() + 0.03
    with trio.move_on_at(deadline) as same:  # the same moment: the cancellation is seen
        await wakeup.wait_until(deadline)
    assert same.cancelled_caught

    woken: list[bool] = []

    async def waiter(far: float) -> None:
        woken.append(await wakeup.wait_until(trio.current_time() + far))

    async with trio.open_nursery() as nursery:
        for _ in range(200):  # cancelled far waits left (lazily) in the timer's heap
            with trio.CancelScope() as gone:
                gone.cancel()
                await wakeup.wait_until(trio.current_time() + 3600)
        nursery.start_soon(waiter, 3600)
        nursery.start_soon(waiter, 3600)
        await trio.sleep(0.01)
        wakeup.set()
        wakeup.set()  # a second set does nothing
    assert woken == [True, True]
    assert await wakeup.wait_until(trio.current_time() - 1) is True  # set: at once

    later = Wakeup()
    with trio.fail_after(30):  # generous: the far entries above must not hold the timer
        t0 = trio.current_time()
        assert await later.wait_until(t0 + 0.05) is False
        assert trio.current_time() >= t0 + 0.05
