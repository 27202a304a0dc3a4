"""Wake-ups for readers that wait on a Session or a turn (session.wait, turn.wait).

The Session actor calls `notify(key)` after each commit that changed the Session or one of
its turns; a waiter re-reads storage when woken, or when its poll interval passes (the spec's
200 ms reread stays the floor of correctness: a missed wake-up only costs latency).
Waiters are counted per key and dropped when they leave, so the map stays bounded by the
number of waiting requests.
"""

from __future__ import annotations

import trio


class Notifier:
    """One `trio.Event` per watched key, replaced after each notification."""

    def __init__(self) -> None:
        self._events: dict[str, trio.Event] = {}
        self._waiters: dict[str, int] = {}

    def notify(self, key: str) -> None:
        event = self._events.pop(key, None)
        if event is not None:
            event.set()

    async def wait(self, key: str, timeout_s: float) -> None:
        """Return when `key` is notified or `timeout_s` passes, whichever is first."""
        event = self._events.get(key)
        if event is None:
            event = self._events[key] = trio.Event()
        self._waiters[key] = self._waiters.get(key, 0) + 1
        try:
            with trio.move_on_after(timeout_s):
                await event.wait()
        finally:
            left = self._waiters[key] - 1
            if left:
                self._waiters[key] = left
            else:
                del self._waiters[key]
                if self._events.get(key) is event and not event.is_set():
                    del self._events[key]
