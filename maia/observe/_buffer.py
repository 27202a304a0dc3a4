"""One subscriber's bounded buffer: coalescing, then overflow with counted drops.

The hub pushes into it synchronously (never awaits), so a subscriber that does not read can
never slow the Node, the storage actor or another subscriber: it only fills its own buffer.
Once the buffer holds `coalesce_after` entries (the consumer is a frame or more behind),
consecutive live deltas of the same item merge into one (their text concatenated: nothing
is lost, `coalesced` counts the merges). At `capacity` the subscriber is marked overflowed;
from then on entries are only counted (`dropped`) and its stream ends with a gap (or resync)
from which the client resumes by cursor.
"""

from __future__ import annotations

from collections import deque
from typing import Final

import trio

from ._shape import Entry, LiveItem

DEFAULT_CAPACITY: Final = 4096
COALESCE_AFTER: Final = 64
LINGER_S: Final = 0.005


class Subscriber:
    """A bounded queue of entries and its wake-up; trio-thread only."""

    def __init__(self, capacity: int = DEFAULT_CAPACITY, coalesce_after: int = COALESCE_AFTER,
                 *, peer: str = "") -> None:  # fmt: skip
        if capacity < 1:
            raise ValueError("capacity must be positive")
        self.capacity = capacity
        self.peer = peer  # who reads it: the connection's remote address ("" when unknown)
        self.coalesce_after = min(coalesce_after, capacity)
        self._items: deque[Entry] = deque()
        self._private: set[int] = set()  # ids of merged entries only this buffer holds
        self._wakeup = trio.Event()
        self._frame_full = trio.Event()  # set once a lingering wait has a frame's worth
        self.overflowed = False
        self.dropped = 0
        self.coalesced = 0
        self.delivered = 0

    def __len__(self) -> int:
        return len(self._items)

    def push(self, entry: Entry) -> None:
        """Queue `entry` (coalescing or counting it as dropped as the bounds say)."""
        if self.overflowed:
            self.dropped += 1
            return
        items = self._items
        if len(items) >= self.coalesce_after and self._merge(entry):
            return
        if len(items) >= self.capacity:
            self.overflowed = True
            self.dropped += 1
            self._wakeup.set()
            self._frame_full.set()
            return
        items.append(entry)
        self._wakeup.set()
        if len(items) >= self.coalesce_after:
            self._frame_full.set()

    def _merge(self, entry: Entry) -> bool:
        live = entry.live
        if live is None or live.record != "item.delta":
            return False
        tail = self._items[-1]
        last = tail.live
        if last is None or last.record != "item.delta" or last.item_id != live.item_id:
            return False
        if id(tail) not in self._private:  # a shared entry is never changed: copy it
            merged = LiveItem(
                "item.delta", last.session_id, last.turn_id, last.item_id, last.kind,
                last.text, last.occurred_ms, last.project_id, last.position, last.number,
                last.coalesced,
            )  # fmt: skip
            tail = Entry(live=merged)
            self._items[-1] = tail
            self._private.add(id(tail))
            last = merged
        last.text += live.text
        last.coalesced += live.coalesced
        last.number = live.number
        self.coalesced += 1
        return True

    def take(self, limit: int) -> list[Entry]:
        """Up to `limit` entries, oldest first."""
        items = self._items
        count = min(limit, len(items))
        out = [items.popleft() for _ in range(count)]
        if self._private:
            for entry in out:
                self._private.discard(id(entry))
        self.delivered += len(out)
        return out

    def put_back(self, entries: list[Entry]) -> None:
        """Return entries taken but not sent (they go first again)."""
        self._items.extendleft(reversed(entries))
        self.delivered -= len(entries)

    async def wait(self, timeout_s: float, linger_s: float = LINGER_S) -> None:
        """Return when something is queued (or overflow happened) or `timeout_s` passed.

        Woken by a first entry, it lingers up to `linger_s` so a burst goes out as one frame
        rather than many small ones (a frame costs the Node far more than a record), and no
        longer than it takes the burst to fill a frame (`coalesce_after` entries): a reader
        waiting here is never the one that lets its own buffer overflow.
        """
        if self._items or self.overflowed:
            return
        if self._wakeup.is_set():
            self._wakeup = trio.Event()
        with trio.move_on_after(timeout_s):
            await self._wakeup.wait()
        if self._items and len(self._items) < self.coalesce_after and linger_s > 0:
            if self._frame_full.is_set():
                self._frame_full = trio.Event()
            with trio.move_on_after(linger_s):
                await self._frame_full.wait()
