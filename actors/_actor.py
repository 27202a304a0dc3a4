"""The actor runtime: one trio task draining a bounded mailbox in batches.

An actor owns its state and sees one message at a time. Senders `tell` (no answer) or `ask`
(an answer, always within a deadline). The mailbox is bounded: a sender facing a full mailbox
waits up to `send_timeout`, then gets `overloaded`; nothing is dropped silently.

Why batches: the actor pops every queued message and handles them with no checkpoint between
them (one checkpoint per batch, for fairness), and `tell` yields only when it must wait for
space. A raw `await send()` pays a schedule point per message; this pays one per batch.
An `ask` parks the caller with `wait_task_rescheduled` and is woken directly by the actor:
no reply channel is allocated. Its deadline is kept by the run's ask timer (`_ask_timer`),
one heap and one sleeping task, not by a cancel scope per ask.

A handler that raises `MaiaError` has refused one message: the asker gets the error and the
actor goes on. Any other exception crashes the actor (its supervisor or registry decides what
next). When an actor stops for any reason, every pending ask fails with `ActorStopped`. The
runtime's own failures are typed (`_errors`): `ActorClosed`, `ActorOverloaded`,
`AskTimedOut`, `ActorStopped`; the API edge maps them to wire errors.

A kind that wants to see its queued messages together (to put several in one storage
transaction) passes `batch=`: it is called with every queued `Envelope` at once and answers
each (`resolve`/`refuse`); an envelope it leaves unanswered fails `ActorStopped`.

`crash(error)` (the actor's effect scope calls it when an effect raises) stops the actor after
the message in hand: `serve` then raises `EffectFailed` from the effect's exception.
"""

from __future__ import annotations

import collections
import enum
from collections.abc import Awaitable, Callable
from typing import Any, Generic, TypeVar

import attrs
import outcome
import trio

from maia.core import MaiaError

from ._ask_timer import TIMED_OUT, ask_timer
from ._errors import ActorClosed, ActorOverloaded, ActorStopped, AskTimedOut

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


class EffectFailed(Exception):
    """An effect of the actor raised: the actor crashed (the cause is `__cause__`)."""

    def __init__(self, actor: str, effect: str) -> None:
        super().__init__(f"actor {actor}: effect {effect} failed")
        self.actor = actor
        self.effect = effect


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


class Envelope(Generic[M]):
    """One queued message as a batch handler sees it; answer it with `resolve` or `refuse`
    (a tell's envelope ignores the answer)."""

    __slots__ = ("_reply", "message")

    def __init__(self, message: M, reply: _Reply | None) -> None:
        self.message = message
        self._reply = reply

    @property
    def answered(self) -> bool:
        return self._reply is None or self._reply.done

    @property
    def is_ask(self) -> bool:
        return self._reply is not None

    def resolve(self, value: Any) -> None:
        if self._reply is not None:
            self._reply.send(outcome.Value(value))

    def refuse(self, error: BaseException) -> None:
        if self._reply is not None:
            self._reply.send(outcome.Error(error))


BatchHandler = Callable[[list[Envelope[M]]], Awaitable[None]]


class Actor(Generic[M, R]):
    """One actor: `await nursery.start(actor.serve)`, then `tell`/`ask` from anywhere.

    `handler(message)` runs in the actor's task, one message at a time; or, with `batch`,
    every queued message at once.
    """

    __slots__ = (
        "_batch",
        "_capacity",
        "_crash",
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
        "vetoes",
    )

    def __init__(
        self,
        name: str,
        handler: Callable[[M], Awaitable[R]] | None = None,
        *,
        batch: BatchHandler[M] | None = None,
        capacity: int = DEFAULT_CAPACITY,
        send_timeout: float = DEFAULT_SEND_TIMEOUT_S,
    ) -> None:
        if capacity < 1:
            raise ValueError("capacity must be at least 1")
        if handler is not None and batch is not None:
            raise ValueError("give at most one of handler and batch")
        self.name = name
        self._handler = handler
        self._batch = batch
        self._capacity = capacity
        self._send_timeout = send_timeout
        # A list, not a deque: an empty deque holds a 64-slot block (760 bytes) for as long
        # as the actor lives idle, an empty list 56 bytes; mailboxes are short (capacity).
        self._queue: list[tuple[M, _Reply | None]] = []
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
        self._crash: tuple[str, BaseException] | None = None
        self.last_active = 0.0  # trio time of the last message handled (passivation)
        self.vetoes = 0  # live effects: while above 0 the registry does not passivate it

    # -- senders -------------------------------------------------------------------------

    def tell_nowait(self, message: M) -> None:
        """Queue `message`. Raises `ActorOverloaded` (full) or `ActorClosed` (stopped)."""
        self._check_open()
        if self._waiters or len(self._queue) + self._reserved >= self._capacity:
            raise ActorOverloaded(self.name)
        self._put(message, None)

    async def tell(self, message: M) -> None:
        """Queue `message`, waiting up to the send timeout for space.

        A cancel point always; a schedule point only when it waits (that is the batching).
        Raises `ActorOverloaded` after the wait, `ActorClosed` if the actor stopped.
        """
        await trio.lowlevel.checkpoint_if_cancelled()
        if self._waiters or len(self._queue) + self._reserved >= self._capacity or self._closed():
            await self._wait_for_space()
        self._put(message, None)

    async def ask(self, message: M, *, within: float = DEFAULT_ASK_TIMEOUT_S) -> R:
        """Send `message` and wait for the handler's answer, at most `within` seconds.

        Raises what the handler raised as `MaiaError` (a refusal), `AskTimedOut` when the
        deadline passes (the message may still be handled), `ActorOverloaded` when the
        mailbox stayed full, `ActorClosed` when refused before queueing, `ActorStopped` when
        the actor stops or crashes first.
        """
        deadline = trio.current_time() + within
        await trio.lowlevel.checkpoint_if_cancelled()
        if self._waiters or len(self._queue) + self._reserved >= self._capacity or self._closed():
            await self._wait_for_space(deadline)
            expired = deadline <= trio.current_time()
        else:
            expired = within <= 0
        reply = _Reply(trio.lowlevel.current_task())
        self._put(message, reply)
        if expired:  # as a scope already past its deadline: a cancel point, then timed out
            reply.abandoned = True
            await trio.lowlevel.checkpoint()
            raise AskTimedOut(self.name, round(within * 1000))
        # The run's ask timer, not a cancel scope a deadline (most of an ask's cost).
        ask_timer().add(deadline, reply)
        answer = await trio.lowlevel.wait_task_rescheduled(reply.abort)
        if answer is TIMED_OUT:
            raise AskTimedOut(self.name, round(within * 1000))
        return answer  # type: ignore[no-any-return]

    def _closed(self) -> bool:
        return self._state is not ActorState.RUNNING and self._state is not ActorState.NEW

    def _check_open(self) -> None:
        if self._closed():
            raise ActorClosed(self.name)  # refused before queueing: safe to retry

    def _put(self, message: M, reply: _Reply | None) -> None:
        self._queue.append((message, reply))
        self._wake()

    def _wake(self) -> None:
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
        raise ActorOverloaded(self.name)

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
        """Handle messages until closed and drained, or cancelled; then fail what is left.

        Raises `EffectFailed` (from the effect's error) after `crash`, and what a handler
        raised that was not a `MaiaError`.
        """
        if self._state is not ActorState.NEW:
            raise RuntimeError(f"actor {self.name} was already served")
        if self._handler is None and self._batch is None:
            raise RuntimeError(f"actor {self.name} has no handler: bind one first")
        self._state = ActorState.RUNNING
        self.last_active = trio.current_time()
        task_status.started()
        try:
            if self._batch is not None:
                await self._batch_loop(self._batch)
            else:
                await self._loop()
        finally:
            self._finish()

    def bind(
        self,
        handler: Callable[[M], Awaitable[R]] | None = None,
        *,
        batch: BatchHandler[M] | None = None,
    ) -> None:
        """Give an actor built without a handler its handler (before `serve`): messages
        sent meanwhile wait in the mailbox (a registry rehydrating it)."""
        if (
            self._handler is not None
            or self._batch is not None
            or (handler is None) == (batch is None)
        ):
            raise ValueError("bind exactly one of handler and batch, once")
        self._handler, self._batch = handler, batch

    def abandon(self, error: BaseException) -> None:
        """Never served (its rehydration failed): queued asks fail with `error`, queued
        tells are dropped (counted), and later sends are refused."""
        self._state = ActorState.RUNNING  # so _finish reads as a stop of a started actor
        self._drop_queued(error)
        self._finish()

    def crash(self, effect: str, error: BaseException) -> None:
        """Stop the actor after the message in hand; `serve` raises `EffectFailed`."""
        if self._crash is None and self._state is not ActorState.STOPPED:
            self._crash = (effect, error)
            self._wake()

    def _raise_crash(self) -> None:
        if self._crash is not None:
            effect, error = self._crash
            raise EffectFailed(self.name, effect) from error

    async def _loop(self) -> None:
        queue = self._queue
        handler = self._handler
        assert handler is not None
        while True:
            if self._crash is not None:
                self._raise_crash()
            if not queue:
                if self._state is ActorState.CLOSING:
                    return
                await self._park()
                continue
            count = len(queue)
            for _ in range(count):
                if not queue or self._crash is not None:
                    break  # close(drain=False) emptied it mid-batch, or an effect failed
                message, reply = queue.pop(0)
                try:
                    result = await handler(message)
                except MaiaError as exc:
                    self._failures += 1
                    if reply is not None:
                        reply.send(outcome.Error(exc))
                except trio.Cancelled:
                    if reply is not None:
                        reply.send(outcome.Error(ActorStopped(self.name)))
                    raise
                except BaseException:
                    self._failures += 1
                    if reply is not None:
                        reply.send(outcome.Error(ActorStopped(self.name, "crashed")))
                    raise
                else:
                    if reply is not None:
                        reply.send(outcome.Value(result))
                    del result
                # An idle actor parks holding nothing of its last message: not the message,
                # nor its reply (which holds the asker's finished task and its context).
                del message, reply
                self._processed += 1
            self.last_active = trio.current_time()
            if self._waiters:
                self._grant_space()
            if queue:
                await trio.lowlevel.checkpoint()  # one schedule point per batch

    async def _batch_loop(self, batch: BatchHandler[M]) -> None:
        queue = self._queue
        while True:
            if self._crash is not None:
                self._raise_crash()
            if not queue:
                if self._state is ActorState.CLOSING:
                    return
                await self._park()
                continue
            envelopes = [Envelope(message, reply) for message, reply in queue]
            queue.clear()
            if self._waiters:
                self._grant_space()
            try:
                await batch(envelopes)
            except MaiaError as exc:
                self._failures += 1
                for envelope in envelopes:
                    if not envelope.answered:
                        envelope.refuse(exc)
            except BaseException as exc:
                self._failures += 1
                why = "stopped" if isinstance(exc, trio.Cancelled) else "crashed"
                for envelope in envelopes:
                    if not envelope.answered:
                        envelope.refuse(ActorStopped(self.name, why))
                raise
            for envelope in envelopes:
                if not envelope.answered:  # a handler that forgot one: never leave it waiting
                    envelope.refuse(ActorStopped(self.name, "left it unanswered"))
            self._processed += len(envelopes)
            # Parked, an idle actor holds nothing of its last batch: an envelope's reply holds
            # the asker's finished task, its context and its frames (~2 KB per idle actor).
            del envelopes, envelope
            self.last_active = trio.current_time()
            if queue:
                await trio.lowlevel.checkpoint()

    async def _park(self) -> None:
        self._idle_task = trio.lowlevel.current_task()
        await trio.lowlevel.wait_task_rescheduled(self._abort_park)

    def _abort_park(self, _: Any) -> trio.lowlevel.Abort:
        self._idle_task = None
        return trio.lowlevel.Abort.SUCCEEDED

    def _drop_queued(self, error: BaseException) -> None:
        """Fail the queued asks with `error`; count the queued tells as dropped."""
        queued = self._queue.copy()
        self._queue.clear()  # in place: the actor's loop holds this list
        for _, reply in queued:
            if reply is not None:
                reply.send(outcome.Error(error))
            else:
                self._dropped += 1

    def _finish(self) -> None:
        self._state = ActorState.STOPPED
        error = ActorStopped(self.name, "crashed" if self._crash is not None else "stopped")
        self._drop_queued(error)
        self._refuse_waiters()
        # A stopped actor is never served again: letting go of its handler breaks the cycle
        # actor -> behaviour -> effect scope -> actor, so a passivated actor is freed at once
        # by its reference count, not by a later collection (the Node's memory after a burst).
        self._handler = self._batch = None
        if self._stopped is not None:
            self._stopped.set()

    # -- control -------------------------------------------------------------------------

    def close(self, *, drain: bool = True) -> None:
        """Refuse new messages. With `drain`, handle what is queued, then stop; without it,
        stop after the current message (queued asks fail `ActorStopped`, tells are counted
        as dropped)."""
        if self._state is ActorState.STOPPED:
            return
        if self._state is ActorState.NEW:
            self._finish()
            return
        self._state = ActorState.CLOSING
        if not drain:
            error = ActorStopped(self.name)
            self._drop_queued(error)
        self._refuse_waiters()
        self._wake()

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

    @property
    def parked(self) -> bool:
        """Whether the actor waits for a message (served, nothing in hand, nothing queued)."""
        return self._idle_task is not None

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
