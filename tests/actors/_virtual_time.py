"""Virtual time that moves only when nothing is at work: MockClock WITHOUT autojump, moved by
the test's own driver task.

MockClock's autojump jumps once every task has been blocked for a threshold of real time;
a task waiting for a storage write (the writer thread) or a read (a worker thread) counts as
blocked, so a write longer than the threshold let the clock jump to a deadline the write was
about to make moot (`test_live_effects_veto_passivation` failed that way once). The driver
jumps only when every task is blocked AND no storage write is admitted and unanswered AND no
worker thread runs (`trio.to_thread`'s default limiter has no token out), and then only to
trio's next deadline, one at a time, so every deadline is exact. Waiting for quiet is a
bounded real-time poll: storage that never goes quiet fails the test instead of hanging.
"""

from __future__ import annotations

import math
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import trio
import trio.testing

from storage import Storage

POLL_S = 0.002  # a real-time pause while a thread works
QUIET_WITHIN_S = 60.0  # real seconds storage and threads may stay busy before the test fails
_PAUSES = trio.CapacityLimiter(1)  # the driver's own pauses (not the default limiter's)


def _busy(store: Storage) -> bool:
    threads = trio.to_thread.current_default_thread_limiter().statistics().borrowed_tokens
    return threads > 0 or store.statistics().mailbox_depth > 0


async def settle(store: Storage) -> None:
    """Return once every other task is blocked and storage and worker threads are idle."""
    started = time.monotonic()
    while True:
        await trio.testing.wait_all_tasks_blocked()
        if not _busy(store):
            return
        if time.monotonic() - started > QUIET_WITHIN_S:
            raise AssertionError(f"storage or a worker thread stayed busy {QUIET_WITHIN_S} s")
        await trio.to_thread.run_sync(time.sleep, POLL_S, limiter=_PAUSES)


async def drive(clock: trio.testing.MockClock, store: Storage) -> None:
    """Forever (cancel it): once all is quiet, jump the clock to trio's next deadline."""
    while True:
        await settle(store)
        ahead = trio.lowlevel.current_statistics().seconds_to_next_deadline
        if math.isinf(ahead):  # nothing will ever wake by time: wait for real work
            await trio.to_thread.run_sync(time.sleep, POLL_S * 5, limiter=_PAUSES)
            continue
        clock.jump(max(ahead, 0.0))


@asynccontextmanager
async def driven_clock(store: Storage) -> AsyncIterator[trio.testing.MockClock]:
    """Run `drive` on the test's MockClock (which must not autojump) for the block."""
    clock = trio.lowlevel.current_clock()
    assert isinstance(clock, trio.testing.MockClock), "run the test under a MockClock"
    assert clock.autojump_threshold == math.inf, "the driven clock never autojumps"
    async with trio.open_nursery() as nursery:
        nursery.start_soon(drive, clock, store)
        try:
            yield clock
        finally:
            nursery.cancel_scope.cancel()
