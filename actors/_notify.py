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
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Collection, Iterable, Mapping
from typing import Final

import trio

from maia.protocol import Turn, TurnShowOutput

RECENT_TURNS: Final = 8192
# Ended turns' first item pages (each under the 1 MiB frame), kept until a waiting
# `turn.send` takes it: few, as each is built only for a turn someone waits on.
RECENT_PAGES: Final = 32


class Notifier:
    """One `trio.Event` per watched key, replaced after each notification; and the latest
    committed snapshot of recently changed turns (bounded, least recently changed dropped),
    so `turn.wait` usually answers without reading storage."""

    def __init__(self) -> None:
        self._events: dict[str, trio.Event] = {}
        self._waiters: dict[trio.Event, int] = {}
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
                  page: bool = False) -> trio.Event:  # fmt: skip
        """The event the next `notify(key)` sets; pair with `release`. With `wanted` (turn
        states), only a notification whose published snapshot is in one of them, or that
        has none, sets it (or one another waiter on `key` wants). With `page`, the commit
        that ends the turn publishes its first item page too (`take_page`)."""
        states = None if wanted is None else tuple(wanted)  # compared by ==, as waiters do
        event = self._events.get(key)
        if event is None:
            event = self._events[key] = trio.Event()
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

    def release(self, key: str, event: trio.Event) -> None:
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
            with trio.move_on_after(timeout_s):
                await event.wait()
        finally:
            self.release(key, event)
