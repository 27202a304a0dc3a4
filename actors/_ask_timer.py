"""Every ask's deadline in one heap per trio run, expired by one sleeping system task.

Why: a cancel scope with a deadline costs ~60k instructions to enter and leave (trio's
generator-based deadline bookkeeping and a new cancel status), the larger part of an ask.
Here an ask costs a heap push: the timer task sleeps in one scope until the earliest
deadline, so it is woken about once per ask timeout under steady load, not once per ask.

The semantics are the scope's: at the deadline (the same float, on the run's clock) the
asker is rescheduled and raises `AskTimedOut`, and its late answer goes nowhere (`abandoned`,
as the scope's abort set it). An enclosing cancellation still reaches the parked asker
through its abort function. An answered or abandoned ask's entry is dropped lazily.
"""

from __future__ import annotations

import heapq
import itertools
import math
from typing import Any, Protocol

import outcome
import trio

TIMED_OUT: Any = object()  # what the timer wakes an expired asker with


class _Reply(Protocol):
    """A parked task the timer may wake: an ask's reply (`_actor._Reply`) or a timed wait on
    a change (`_notify.Wakeup.wait_until`). `done` once answered, `abandoned` once given up
    (the timer sets it when it wakes the task with `TIMED_OUT`)."""

    task: trio.lowlevel.Task
    done: bool
    abandoned: bool


class AskTimer:
    """The asks of one trio run waiting for an answer, by deadline."""

    __slots__ = ("_heap", "_order", "_scope")

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, _Reply]] = []
        self._order = itertools.count()  # ties broken by arrival; a _Reply does not compare
        self._scope: trio.CancelScope | None = None  # the timer task's sleep, while it sleeps

    def add(self, deadline: float, reply: _Reply) -> None:
        """Wake `reply`'s task with `TIMED_OUT` at `deadline` unless answered or abandoned."""
        heap = self._heap
        while heap and _settled(heap[0][2]):  # answered asks at the head: mostly all of them
            heapq.heappop(heap)
        heapq.heappush(heap, (deadline, next(self._order), reply))
        scope = self._scope
        if scope is not None and deadline < scope.deadline:
            scope.deadline = deadline  # earlier than the timer sleeps to: it wakes sooner

    async def run(self) -> None:
        """The timer task: sleep until the earliest deadline, expire what is due, repeat."""
        while True:
            with trio.CancelScope(deadline=self._next_deadline()) as scope:
                self._scope = scope
                await trio.sleep_forever()
            self._scope = None
            self._expire(trio.current_time())

    def _next_deadline(self) -> float:
        heap = self._heap
        while heap and _settled(heap[0][2]):
            heapq.heappop(heap)
        return heap[0][0] if heap else math.inf

    def _expire(self, now: float) -> None:
        heap = self._heap
        while heap and heap[0][0] <= now:
            reply = heapq.heappop(heap)[2]
            if not _settled(reply):
                reply.abandoned = True  # as the scope's abort: a late answer goes nowhere
                trio.lowlevel.reschedule(reply.task, outcome.Value(TIMED_OUT))


def _settled(reply: _Reply) -> bool:
    return reply.done or reply.abandoned


_TIMER: trio.lowlevel.RunVar[AskTimer] = trio.lowlevel.RunVar("actors_ask_timer")


def ask_timer() -> AskTimer:
    """This run's timer, its task started at the first ask."""
    try:
        return _TIMER.get()
    except LookupError:
        timer = AskTimer()
        _TIMER.set(timer)
        trio.lowlevel.spawn_system_task(timer.run, name="actors.ask_timer")
        return timer
