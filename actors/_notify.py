"""Wake-ups for readers that wait on a Session or a turn (session.wait, turn.wait).

The Session actor calls `notify(key)` after each commit that changed the Session or one of
its turns. A waiter subscribes *before* it reads storage, so a change committed while it
reads still wakes it; it also re-reads when its poll interval passes (the spec's 200 ms
reread stays the floor of correctness). Events are dropped once nobody waits on them, so
the map stays bounded by the number of waiting requests.

A turn's waiters may say which states they wait for (`subscribe(key, wanted)`): a
notification whose published snapshot is in none of them wakes nobody, since each waiter
would read that same snapshot and sleep again (a turn.send --wait was woken by its turn's
dispatch and progress commits for nothing). With no snapshot kept, or a waiter that wants
any change, every notification wakes.

Only a waiter that answers with the ended turn's items (a waiting `turn.send`) asks for its
first item page (`subscribe(..., page=True)`); the commit builds that page in the writer
thread only then (`page_wanted`), not for a `turn.wait` that answers with the turn alone.

What a waiter waits on is a `Wakeup` (set once, as a `trio.Event`), and its bounded wait
(`wait_until`) keeps its deadline in the run's ask timer (`_ask_timer`) instead of a cancel
scope: a `turn.send --wait` makes one such wait a turn, and a scope with a deadline was
most of its cost. Each waiter parks on its own entry, so the timer wakes that one waiter.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Collection, Iterable, Mapping
from typing import Any, Final

import outcome
import trio

from maia.protocol import Turn, TurnShowOutput

from ._ask_timer import TIMED_OUT, ask_timer

RECENT_TURNS: Final = 8192
# Ended turns' first item pages (each under the 1 MiB frame), kept until a waiting
# `turn.send` takes it: few, as each is built only for a turn someone waits on.
RECENT_PAGES: Final = 32


class _Parked:
    """One task parked in `Wakeup.wait_until`: woken by `set` (done) or by the ask timer at
    its deadline (abandoned, `TIMED_OUT`), or cancelled (abandoned)."""

    __slots__ = ("abandoned", "done", "task")

    def __init__(self, task: trio.lowlevel.Task) -> None:
        self.task = task
        self.done = False
        self.abandoned = False


class Wakeup:
    """Set once by `Notifier.notify`, as a `trio.Event` is; `wait` and `wait_until` are
    cancel points whether or not it is set."""

    __slots__ = ("_parked", "_set")

    def __init__(self) -> None:
        self._set = False
        self._parked: dict[_Parked, None] = {}  # insertion-ordered: woken in arrival order

    def is_set(self) -> bool:
        return self._set

    def set(self) -> None:
        """Wake every waiter (once: a second call does nothing)."""
        if self._set:
            return
        self._set = True
        parked, self._parked = self._parked, {}
        for entry in parked:
            if not entry.abandoned:
                entry.done = True
                trio.lowlevel.reschedule(entry.task, outcome.Value(True))

    async def wait(self) -> None:
        """Return once set (at once, after a checkpoint, when it is)."""
        await self.wait_until(math.inf)

    async def wait_until(self, deadline: float) -> bool:
        """True once set, False when `deadline` (trio time) passes first: as
        `with trio.move_on_at(deadline): await event.wait()`, which a later check of the
        deadline told apart. Set already: a checkpoint, True; not set and `deadline` past: a
        checkpoint, False. An enclosing cancellation raises `Cancelled` as it would there
        (a scope expiring at the same moment as `deadline` included: it is seen first)."""
        if self._set:
            await trio.lowlevel.checkpoint()
            return True
        if deadline <= trio.current_time():
            await trio.lowlevel.checkpoint()
            return self._set
        entry = _Parked(trio.lowlevel.current_task())
        parked = self._parked
        parked[entry] = None

        def abort(_: Any) -> trio.lowlevel.Abort:
            entry.abandoned = True
            parked.pop(entry, None)
            return trio.lowlevel.Abort.SUCCEEDED

        if deadline != math.inf:
            ask_timer().add(deadline, entry)
        woken = await trio.lowlevel.wait_task_rescheduled(abort)
        if woken is TIMED_OUT:
            parked.pop(entry, None)  # the timer marked it abandoned: `set` skips it anyway
            return False
        return True


class Notifier:
    """One `Wakeup` per watched key, replaced after each notification; and the latest
    committed snapshot of recently changed turns (bounded, least recently changed dropped),
    so `turn.wait` usually answers without reading storage."""

    def __init__(self) -> None:
        self._events: dict[str, Wakeup] = {}
        self._waiters: dict[Wakeup, int] = {}
        # Per watched key, the states its waiters wait for (None: any change).
        self._wanted: dict[str, tuple[str, ...] | None] = {}
        # The watched keys whose current event has a waiter that wants the item page.
        self._paged: set[str] = set()
        self._turns: OrderedDict[str, Turn] = OrderedDict()
        self._pages: OrderedDict[str, TurnShowOutput] = OrderedDict()

    def publish(self, turns: Iterable[Turn],
                pages: Mapping[str, TurnShowOutput] | None = None) -> None:  # fmt: skip
        """Record committed turn snapshots (call after the commit, before notifying), and
        with an ended turn its first item page (`turn.show`'s first answer) when built."""
        recent, held = self._turns, self._pages
        for turn in turns:
            recent[turn.turn_id] = turn
            recent.move_to_end(turn.turn_id)
            page = pages.get(turn.turn_id) if pages else None
            if page is not None:
                held[turn.turn_id] = page
            elif held:
                held.pop(turn.turn_id, None)  # an older page is not this snapshot's
        while len(recent) > RECENT_TURNS:
            recent.popitem(last=False)
        while len(held) > RECENT_PAGES:
            held.popitem(last=False)

    def turn(self, turn_id: str) -> Turn | None:
        """The last committed snapshot of a recently changed turn, if kept."""
        return self._turns.get(turn_id)

    def take_page(self, turn_id: str) -> TurnShowOutput | None:
        """The first item page published with the turn's last snapshot, once (then gone)."""
        return self._pages.pop(turn_id, None)

    def watched(self, key: str) -> bool:
        """Whether someone waits on `key` now (a plain dict look-up: safe from the writer
        thread, where a commit decides whether to build an ended turn's page)."""
        return key in self._events

    def page_wanted(self, key: str) -> bool:
        """Whether a waiter on `key` now wants its ended turn's first item page (a plain set
        look-up: safe from the writer thread, where the commit decides whether to build it)."""
        return key in self._paged

    def notify(self, key: str) -> None:
        event = self._events.get(key)
        if event is None:
            return
        wanted = self._wanted.get(key)
        if wanted is not None:
            turn = self._turns.get(key)
            if turn is not None and turn.state not in wanted:
                return  # every waiter would read this snapshot and wait again
        self._forget(key)
        event.set()

    def subscribe(self, key: str, wanted: Collection[str] | None = None, *,
                  page: bool = False) -> Wakeup:  # fmt: skip
        """The event the next `notify(key)` sets; pair with `release`. With `wanted` (turn
        states), only a notification whose published snapshot is in one of them, or that
        has none, sets it (or one another waiter on `key` wants). With `page`, the commit
        that ends the turn publishes its first item page too (`take_page`)."""
        states = None if wanted is None else tuple(wanted)  # compared by ==, as waiters do
        event = self._events.get(key)
        if event is None:
            event = self._events[key] = Wakeup()
            self._wanted[key] = states
        else:
            held = self._wanted.get(key)
            if held is None or states is None:
                self._wanted[key] = None
            else:
                self._wanted[key] = held + tuple(s for s in states if s not in held)
        if page:
            self._paged.add(key)
        self._waiters[event] = self._waiters.get(event, 0) + 1
        return event

    def release(self, key: str, event: Wakeup) -> None:
        left = self._waiters.pop(event, 1) - 1
        if left:
            self._waiters[event] = left
        elif self._events.get(key) is event:
            self._forget(key)

    def _forget(self, key: str) -> None:
        """Drop `key`'s event and what its waiters wanted (it was set, or nobody waits)."""
        del self._events[key]
        self._wanted.pop(key, None)
        self._paged.discard(key)

    async def wait(self, key: str, timeout_s: float) -> None:
        """Return when `key` is notified or `timeout_s` passes, whichever is first."""
        event = self.subscribe(key)
        try:
            await event.wait_until(trio.current_time() + timeout_s)
        finally:
            self.release(key, event)
