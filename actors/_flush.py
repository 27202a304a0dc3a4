"""One timer task for every actor's delayed flush of buffered rows (a runtime service).

A running turn's buffered `started` and message text reach storage at most `FLUSH_MS` after
they arrive (see `_progress`). A task per turn that slept and then told its actor `Flush`
cost a task spawn, a cancel-scope expiry and a mailbox message per turn on the hot path,
although the turn's end usually wrote the buffer first. Here one task keeps the due times in
arrival order (every delay is the same, so the FIFO stays sorted), wakes once for all the
entries due within a slack of a fifth of the delay (earlier is allowed, later is not), and asks
each Session whether anything is still unwritten: only then does its actor get a `Flush`.

Bounded: a Session arms at most one entry at a time (its `flush_at` gate), so the queue
holds at most one entry per live Session actor.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Awaitable, Callable

import trio

from actors._errors import ActorError
from maia.core import MaiaError

log = logging.getLogger("maia.actors")

# (due time, "still unwritten?" — which may also clear the Session's gate, the tell)
_Entry = tuple[float, Callable[[], bool], Callable[[], Awaitable[None]]]


class FlushTimer:
    """Shared by the Session actors of one runtime; `serve` runs in the runtime's nursery."""

    def __init__(self, delay_s: float) -> None:
        self.delay_s = delay_s
        self._slack_s = delay_s / 5
        self._due: deque[_Entry] = deque()
        self._wake = trio.Event()

    def arm(self, pending: Callable[[], bool], tell: Callable[[], Awaitable[None]]) -> float:
        """Call `tell` at most `delay_s` from now if `pending()` then says so; the due time."""
        due = trio.current_time() + self.delay_s
        self._due.append((due, pending, tell))
        self._wake.set()
        return due

    async def serve(self, nursery: trio.Nursery) -> None:
        """Fire entries as they fall due (tells run as their own tasks: one Session's full
        mailbox never delays another's flush)."""
        while True:
            if not self._due:
                self._wake = trio.Event()
                await self._wake.wait()
                continue
            first = self._due[0][0] - self._slack_s
            if first > trio.current_time():
                await trio.sleep_until(first)
            horizon = trio.current_time() + self._slack_s
            while self._due and self._due[0][0] <= horizon:
                _, pending, tell = self._due.popleft()
                if pending():
                    nursery.start_soon(_quietly, tell)


async def _quietly(tell: Callable[[], Awaitable[None]]) -> None:
    try:
        await tell()
    except (MaiaError, ActorError):  # the buffer is written by the turn's end anyway
        log.warning("a delayed flush was not delivered", exc_info=True)
