"""A turn's events on their way from the worker's frame reader to the turn's consumer.

One turn, one reader that puts, one consumer that takes: a bounded deque and at most one
parked consumer. It keeps a trio memory channel's bound and close semantics (the calls a
turn uses raise what the channel's would), without what a turn never needs (several
senders or receivers, clones, statistics, waiting senders): a channel cost ~4–9 µs to open
per turn (this ~0.4) and twice this per event. The bound is at least one event, so a parked
consumer (an empty queue) never changes whether a put fits, as it can in a channel of none.

The reader never waits: a put beyond the bound raises `trio.WouldBlock` (the handle fences
the worker: the ack window bounds what it may send), a put after the consumer left raises
`trio.BrokenResourceError`. The consumer's `get` is a checkpoint, as a channel's `receive`.
"""

from __future__ import annotations

from collections import deque
from typing import Generic, TypeVar

import trio

T = TypeVar("T")


class TurnEventQueue(Generic[T]):
    """A bounded single-producer, single-consumer queue of one turn's events."""

    __slots__ = ("_abandoned", "_capacity", "_ended", "_events", "_waiter")

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError(f"capacity: must be 1 or more, not {capacity}")
        self._capacity = capacity
        self._events: deque[T] = deque()
        self._ended = False  # the producer put its last event (or gave up)
        self._abandoned = False  # the consumer left: nobody takes what is put
        self._waiter: trio.lowlevel.Task | None = None

    # -- the producer's side (the frame reader) -------------------------------------------

    def put_nowait(self, event: T) -> None:
        """Queue `event`. Raises `trio.BrokenResourceError` when the consumer left,
        `trio.ClosedResourceError` after `end`, `trio.WouldBlock` at the bound."""
        if self._abandoned:
            raise trio.BrokenResourceError
        if self._ended:
            raise trio.ClosedResourceError
        if len(self._events) >= self._capacity:
            raise trio.WouldBlock
        self._events.append(event)
        self._wake()

    def end(self) -> None:
        """No more events: the consumer takes what is queued, then sees the end. Idempotent."""
        self._ended = True
        self._wake()

    # -- the consumer's side (the turn's iterator) ----------------------------------------

    def get_nowait(self) -> T:
        """The next event. Raises `trio.WouldBlock` when none is queued yet,
        `trio.EndOfChannel` once the producer ended and all was taken,
        `trio.ClosedResourceError` after `abandon`."""
        if self._abandoned:
            raise trio.ClosedResourceError
        if self._events:
            return self._events.popleft()
        if self._ended:
            raise trio.EndOfChannel
        raise trio.WouldBlock

    async def get(self) -> T:
        """The next event, waiting for it (a checkpoint either way). Raises as `get_nowait`
        does except `trio.WouldBlock`; `trio.BusyResourceError` if another task waits."""
        await trio.lowlevel.checkpoint_if_cancelled()
        try:
            event = self.get_nowait()
        except trio.WouldBlock:
            pass
        else:
            await trio.lowlevel.cancel_shielded_checkpoint()
            return event
        while True:
            if self._waiter is not None:
                raise trio.BusyResourceError("another task is waiting for this turn's events")
            self._waiter = trio.lowlevel.current_task()
            await trio.lowlevel.wait_task_rescheduled(self._abort)
            try:
                return self.get_nowait()
            except trio.WouldBlock:  # woken with nothing for us: wait again
                continue

    def abandon(self) -> None:
        """The consumer is done: drop what is queued; later puts raise. Idempotent."""
        self._abandoned = True
        self._events.clear()
        self._wake()

    def __enter__(self) -> TurnEventQueue[T]:
        return self

    def __exit__(self, *_: object) -> None:
        self.abandon()  # synchronous: no schedule point at a turn's end

    # -- waking the consumer --------------------------------------------------------------

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None:
            self._waiter = None
            trio.lowlevel.reschedule(waiter)

    def _abort(self, _: object) -> trio.lowlevel.Abort:
        self._waiter = None  # cancelled while waiting: nothing was taken
        return trio.lowlevel.Abort.SUCCEEDED
