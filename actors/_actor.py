"""The actor runtime: one trio task draining a bounded mailbox in batches.

An actor owns its state and sees one message at a time. Senders `tell` (no answer) or `ask`
(an answer, always within a deadline). The mailbox is bounded: a sender facing a full mailbox
waits up to `send_timeout`, then gets `overloaded`; nothing is dropped silently.

Why batches: the actor pops every queued message and handles them with no checkpoint between
them (one checkpoint per batch, for fairness), and `tell` yields only when it must wait for
space. A raw `await send()` pays a schedule point per message; this pays one per batch.
An `ask` parks the caller with `wait_task_rescheduled` and is woken directly by the actor:
no reply channel is allocated.

A handler that raises `MaiaError` has refused one message: the asker gets the error and the
actor goes on. Any other exception crashes the actor (its supervisor or registry decides what
next). When an actor stops for any reason, every pending ask fails with `unavailable`.
"""

from __future__ import annotations

import collections
import enum
from collections.abc import Awaitable, Callable
from typing import Any, Generic, TypeVar

import attrs
import outcome
import trio

from maia.protocol import MaiaError

M = TypeVar("M")
R = TypeVar("R")

DEFAULT_CAPACITY = 256
DEFAULT_SEND_TIMEOUT_S = 5.0
DEFAULT_ASK_TIMEOUT_S = 30.0


class ActorState(enum.Enum):
    """Where an actor is in its own life."""

    NEW = "new"
    RUNNING = "running"
    CLOSING = "closing"  # refuses new messages, drains what is queued
    STOPPED = "stopped"


@attrs.frozen
class ActorStatistics:
    """A snapshot: mailbox depth and capacity, messages handled, refusals and crashes."""

    name: str
    state: ActorState
    depth: int
    capacity: int
    processed: int
    failures: int
    dropped: int
    waiting_senders: int


class _Reply:
    """Where one ask's answer goes: the parked asking task, unless it gave up."""

    __slots__ = ("abandoned", "done", "task")

    def __init__(self, task: trio.lowlevel.Task) -> None:
        self.task = task
        self.abandoned = False
        self.done = False

    def abort(self, _: Any) -> trio.lowlevel.Abort:
        self.abandoned = True
        return trio.lowlevel.Abort.SUCCEEDED

    def send(self, result: outcome.Outcome[Any]) -> None:
        if self.done:
            return
        self.done = True
        if not self.abandoned:
            trio.lowlevel.reschedule(self.task, result)


class Actor(Generic[M, R]):
    """One actor: `await nursery.start(actor.serve)`, then `tell`/`ask` from anywhere.

    `handler(message)` runs in the actor's task, one message at a time.
    """

    __slots__ = (
        "_capacity",
        "_dropped",
        "_failures",
        "_handler",
        "_idle_task",
        "_processed",
        "_queue",
        "_reserved",
        "_send_timeout",
        "_state",
        "_stopped",
        "_waiters",
        "last_active",
        "name",
    )

    def __init__(
        self,
        name: str,
        handler: Callable[[M], Awaitable[R]],
        *,
        capacity: int = DEFAULT_CAPACITY,
        send_timeout: float = DEFAULT_SEND_TIMEOUT_S,
    ) -> None:
        if capacity < 1:
            raise ValueError("capacity must be at least 1")
        self.name = name
        self._handler = handler
        self._capacity = capacity
        self._send_timeout = send_timeout
        self._queue: collections.deque[tuple[M, _Reply | None]] = collections.deque()
        self._idle_task: trio.lowlevel.Task | None = None
        # Senders parked on a full mailbox, first come first served; a woken sender holds a
        # reserved slot so a newcomer cannot barge ahead of it. Created on first need.
        self._waiters: collections.deque[trio.lowlevel.Task] | None = None
        self._reserved = 0
        self._stopped: trio.Event | None = None  # created when someone waits for the stop
        self._state = ActorState.NEW
        self._processed = 0
        self._failures = 0
        self._dropped = 0
        self.last_active = 0.0  # trio time of the last message handled (passivation)

    # -- senders -------------------------------------------------------------------------

    def tell_nowait(self, message: M) -> None:
        """Queue `message`. Raises `MaiaError` `overloaded` (full) or `unavailable` (stopped)."""
        self._check_open()
        if self._waiters or len(self._queue) + self._reserved >= self._capacity:
            raise self._full()
        self._put(message, None)

    async def tell(self, message: M) -> None:
        """Queue `message`, waiting up to the send timeout for space.

        A cancel point always; a schedule point only when it waits (that is the batching).
        Raises `MaiaError` `overloaded` after the wait, `unavailable` if the actor stopped.
        """
        await trio.lowlevel.checkpoint_if_cancelled()
        if self._waiters or len(self._queue) + self._reserved >= self._capacity or self._closed():
            await self._wait_for_space()
        self._put(message, None)

    async def ask(self, message: M, *, within: float = DEFAULT_ASK_TIMEOUT_S) -> R:
        """Send `message` and wait for the handler's answer, at most `within` seconds.

        Raises what the handler raised as `MaiaError` (a refusal), `deadline_exceeded` when
        the deadline passes (the message may still be handled), `overloaded` when the mailbox
        stayed full, `unavailable` when the actor stops or crashes first.
        """
        deadline = trio.current_time() + within
        await trio.lowlevel.checkpoint_if_cancelled()
        if self._waiters or len(self._queue) + self._reserved >= self._capacity or self._closed():
            await self._wait_for_space(deadline)
        reply = _Reply(trio.lowlevel.current_task())
        self._put(message, reply)
        # A bare CancelScope, not move_on_at: the scope is most of an ask's cost.
        with trio.CancelScope(deadline=deadline):
            return await trio.lowlevel.wait_task_rescheduled(reply.abort)  # type: ignore[no-any-return]
        raise MaiaError(
            "deadline_exceeded",
            f"ask to actor {self.name} did not finish within {round(within * 1000)} ms",
            {"method": "ask", "ms": round(within * 1000), "target": self.name},
        )

    def _closed(self) -> bool:
        return self._state is not ActorState.RUNNING and self._state is not ActorState.NEW

    def _check_open(self) -> None:
        if self._closed():
            # reason "closed": refused before queueing, so the sender may safely retry
            raise MaiaError("unavailable", f"actor {self.name} is stopped",
                            {"target": self.name, "reason": "closed"})  # fmt: skip

    def _put(self, message: M, reply: _Reply | None) -> None:
        self._queue.append((message, reply))
        task = self._idle_task
        if task is not None:
            self._idle_task = None
            trio.lowlevel.reschedule(task)

    async def _wait_for_space(self, deadline: float | None = None) -> None:
        self._check_open()
        if not self._waiters and len(self._queue) + self._reserved < self._capacity:
            return
        if deadline is None:
            deadline = trio.current_time() + self._send_timeout
        if self._waiters is None:
            self._waiters = collections.deque()
        waiters = self._waiters
        task = trio.lowlevel.current_task()
        waiters.append(task)

        def abort(_: Any) -> trio.lowlevel.Abort:
            waiters.remove(task)
            return trio.lowlevel.Abort.SUCCEEDED

        with trio.move_on_at(deadline):
            granted: bool = await trio.lowlevel.wait_task_rescheduled(abort)
            if granted:
                self._reserved -= 1
                return
        self._check_open()
        raise self._full()

    def _full(self) -> MaiaError:
        return MaiaError("overloaded", f"actor {self.name} mailbox is full", {"target": self.name})

    def _grant_space(self) -> None:
        waiters = self._waiters
        while waiters and len(self._queue) + self._reserved < self._capacity:
            self._reserved += 1
            trio.lowlevel.reschedule(waiters.popleft(), outcome.Value(True))

    def _refuse_waiters(self) -> None:
        waiters = self._waiters
        while waiters:
            trio.lowlevel.reschedule(waiters.popleft(), outcome.Value(False))

    # -- the actor's own task ------------------------------------------------------------

    async def serve(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Handle messages until closed and drained, or cancelled; then fail what is left."""
        if self._state is not ActorState.NEW:
            raise RuntimeError(f"actor {self.name} was already served")
        self._state = ActorState.RUNNING
        self.last_active = trio.current_time()
        task_status.started()
        try:
            await self._loop()
        finally:
            self._finish()

    async def _loop(self) -> None:
        queue = self._queue
        handler = self._handler
        while True:
            if not queue:
                if self._state is ActorState.CLOSING:
                    return
                await self._park()
                continue
            count = len(queue)
            for _ in range(count):
                if not queue:
                    break  # close(drain=False) emptied it mid-batch
                message, reply = queue.popleft()
                try:
                    result = await handler(message)
                except MaiaError as exc:
                    self._failures += 1
                    if reply is not None:
                        reply.send(outcome.Error(exc))
                except trio.Cancelled:
                    if reply is not None:
                        reply.send(outcome.Error(self._gone("stopped")))
                    raise
                except BaseException:
                    self._failures += 1
                    if reply is not None:
                        reply.send(outcome.Error(self._gone("crashed")))
                    raise
                else:
                    if reply is not None:
                        reply.send(outcome.Value(result))
                self._processed += 1
            self.last_active = trio.current_time()
            if self._waiters:
                self._grant_space()
            if queue:
                await trio.lowlevel.checkpoint()  # one schedule point per batch

    async def _park(self) -> None:
        self._idle_task = trio.lowlevel.current_task()
        await trio.lowlevel.wait_task_rescheduled(self._abort_park)

    def _abort_park(self, _: Any) -> trio.lowlevel.Abort:
        self._idle_task = None
        return trio.lowlevel.Abort.SUCCEEDED

    def _gone(self, why: str) -> MaiaError:
        return MaiaError("unavailable", f"actor {self.name} {why}", {"target": self.name})

    def _finish(self) -> None:
        self._state = ActorState.STOPPED
        error = self._gone("stopped")
        while self._queue:
            _, reply = self._queue.popleft()
            if reply is not None:
                reply.send(outcome.Error(error))
            else:
                self._dropped += 1
        self._refuse_waiters()
        if self._stopped is not None:
            self._stopped.set()

    # -- control -------------------------------------------------------------------------

    def close(self, *, drain: bool = True) -> None:
        """Refuse new messages. With `drain`, handle what is queued, then stop; without it,
        stop after the current message (queued asks fail `unavailable`, tells are counted
        as dropped)."""
        if self._state is ActorState.STOPPED:
            return
        if self._state is ActorState.NEW:
            self._finish()
            return
        self._state = ActorState.CLOSING
        if not drain:
            error = self._gone("stopped")
            while self._queue:
                _, reply = self._queue.popleft()
                if reply is not None:
                    reply.send(outcome.Error(error))
                else:
                    self._dropped += 1
        self._refuse_waiters()
        task = self._idle_task
        if task is not None:
            self._idle_task = None
            trio.lowlevel.reschedule(task)

    async def wait_stopped(self) -> None:
        """Return once the actor's task has finished."""
        if self._state is ActorState.STOPPED:
            await trio.lowlevel.checkpoint()
            return
        if self._stopped is None:
            self._stopped = trio.Event()
        await self._stopped.wait()

    @property
    def state(self) -> ActorState:
        return self._state

    @property
    def depth(self) -> int:
        return len(self._queue)

    def statistics(self) -> ActorStatistics:
        """A frozen snapshot of the mailbox and counters."""
        return ActorStatistics(
            name=self.name,
            state=self._state,
            depth=len(self._queue),
            capacity=self._capacity,
            processed=self._processed,
            failures=self._failures,
            dropped=self._dropped,
            waiting_senders=len(self._waiters) if self._waiters is not None else 0,
        )
