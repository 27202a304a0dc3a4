"""One direction's queue of encoded frames, each with the time it is due.

Delays keep the order (TCP does): a message is never due before the one ahead of it. Only
the `reorder` knob reorders: a held message goes out right after the next one, or alone
once `hold_s` passes with no next message. The queue is bounded; `wait_until` and
`wait_for_space` are bounded by the caller's deadline.
"""

from __future__ import annotations

import collections

import attrs
import trio


@attrs.define
class Outbox:
    max_pending: int
    queue: collections.deque[tuple[float, bytes]] = attrs.Factory(collections.deque)
    held: tuple[float, float, bytes] | None = None  # (due, release at, frame bytes)
    finished: bool = False
    _changed: trio.Event = attrs.Factory(trio.Event)

    @property
    def latest_due(self) -> float:
        return self.queue[-1][0] if self.queue else float("-inf")

    @property
    def empty(self) -> bool:
        return not self.queue and self.held is None

    def _wake(self) -> None:
        self._changed.set()
        self._changed = trio.Event()

    def push(self, due: float, data: bytes, copies: int = 1) -> None:
        """Queue `data` (`copies` times); a held message follows it."""
        for _ in range(copies):
            self.queue.append((max(due, self.latest_due), data))
        self.release_held()

    def hold(self, due: float, data: bytes, release_at: float) -> bool:
        """Hold `data` back for the next message; False when one is held already."""
        if self.held is not None:
            return False
        self.held = (due, release_at, data)
        self._wake()
        return True

    def release_held(self) -> None:
        if self.held is not None:
            due, _, data = self.held
            self.held = None
            self.queue.append((max(due, self.latest_due), data))
        self._wake()

    def finish(self) -> None:
        """Nothing more comes; what is queued or held still goes out."""
        self.release_held()
        self.finished = True
        self._wake()

    def next_wake(self, now: float, idle_s: float) -> float:
        times = [now + idle_s]
        if self.queue:
            times.append(self.queue[0][0])
        if self.held is not None:
            times.append(self.held[1])
        return min(times)

    def pop_due(self, now: float) -> bytes | None:
        if self.held is not None and self.held[1] <= now:
            self.release_held()
        if self.queue and self.queue[0][0] <= now:
            data = self.queue.popleft()[1]
            self._wake()
            return data
        return None

    async def wait_until(self, deadline: float) -> None:
        changed = self._changed
        with trio.move_on_at(deadline):
            await changed.wait()

    async def wait_for_space(self, timeout_s: float) -> bool:
        """True once fewer than `max_pending` frames wait; False after `timeout_s`."""
        with trio.move_on_after(timeout_s):
            while len(self.queue) >= self.max_pending:
                await self._changed.wait()
            return True
        return False
