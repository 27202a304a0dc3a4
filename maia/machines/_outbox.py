"""The Execution Node's unacknowledged evidence, frame by frame, and its (re-)sending.

The spool (`supervision.leases.EvidenceSpool`) counts the records; this keeps the frames
themselves until Control acknowledges them cumulatively, so a record that was on the wire
when the link dropped is sent again. Per source, records go out in sequence order over one
connection: `rewind` (when a connection opens, before anything is sent on it) moves every
source's send cursor back to its acknowledgement, and `flush` sends what lies after the
cursor, under one lock, stopping at the first failed send. Control de-duplicates by
sequence, so a record it already took is not stored twice, whichever copy arrives.

Only an `ack` frame (Control stored the records) releases frames: a grant's
acknowledgedThrough follows the Node's own reports, so it moves the spool's counters but
not this. Bounded like the spool: at `SPOOL_MAX_RECORDS` frames or `SPOOL_MAX_BYTES` of
text held for one source, `check_room` raises `held` (admission stops, the turn is
interrupted, its outcome uncertain); nothing is dropped to make room.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Final

import trio

from maia.core import MaiaError
from supervision.leases import SPOOL_MAX_BYTES, SPOOL_MAX_RECORDS

log = logging.getLogger("maia.machines")
Send = Callable[[object], Awaitable[bool]]
MAX_WAITING: Final = 1024  # worker phase frames waiting for the link (hello reconciles past it)
MAX_EXITS: Final = 64  # the latest `exited` frames, sent again on every new connection
EXIT_ACK_WAIT_S: Final = 15.0  # an exit waits this long for its turns' records' ack at most
MAX_TRACKED: Final = 1024  # attempts whose newest record is remembered


class EvidenceOutbox:
    """Frames per source by sequence, a send cursor per source, one send lock."""

    def __init__(self, send: Send) -> None:
        self._send = send
        self._frames: dict[str, dict[int, tuple[object, int]]] = {}  # frame, its size
        self._bytes: dict[str, int] = {}
        self._sent: dict[str, int] = {}
        self._acknowledged: dict[str, int] = {}
        self._generation = 0  # a rewind ends a flush that sends on the older connection
        self._lock = trio.Lock()
        self._waiting: list[tuple[str, object, bool]] = []  # (attempt, frame, an exit?)
        # An exit goes only once Control acknowledged its attempt's records (so its Session
        # took the turn's end before it hears of the exit), or after EXIT_ACK_WAIT_S.
        self._last_of: dict[str, tuple[str, int]] = {}  # attempt -> (source, newest record)
        self._exit_due: dict[str, float] = {}
        # An exit sent into a dying link is lost with no ack to tell: the latest are sent
        # again on each new connection (Control ignores an exit it heard) and hello lists
        # them, so Control never ends such an attempt before its re-sent evidence arrives.
        self._exits: dict[str, object] = {}
        # So is an `initialized`: kept until the attempt's first turn record (Control only
        # prompts a worker it heard initialize) or its exit, and sent again on each rewind.
        self._inits: dict[str, object] = {}
        # Records not yet committed to the Node's SQLite (`_outbox_store`): a flush stops
        # before one, so no record is on the wire before it would survive a restart.
        self._unsaved: set[tuple[str, int]] = set()
        self.resent = 0  # records sent again after a rewind (logged, and read by tests)

    def held(self, source: str) -> int:
        """Records of `source` kept until Control acknowledges them."""
        return len(self._frames.get(source, {}))

    def check_room(self, source: str, size: int) -> None:
        """Raise `held` when one more record of `size` would pass a spool quota."""
        if (self.held(source) >= SPOOL_MAX_RECORDS
                or self._bytes.get(source, 0) + size > SPOOL_MAX_BYTES):  # fmt: skip
            raise MaiaError("held", f"admission is held: {source} is at its quota of records"
                            " Control has not acknowledged")  # fmt: skip

    def keep(self, source: str, sequence: int, frame: object, size: int = 1,
             attempt_id: str | None = None, *, saved: bool = True) -> None:  # fmt: skip
        """Hold record `sequence` (the spool just admitted it) until it is acknowledged;
        `saved=False`: not sent before `saved` says it is committed."""
        if not saved:
            self._unsaved.add((source, sequence))
        if sequence <= self._sent.get(source, 0):  # admitted before records already sent
            # (a worker's spawn record is kept once the process started): send from it again
            self._sent[source] = max(self._acknowledged.get(source, 0), sequence - 1)
        self._frames.setdefault(source, {})[sequence] = (frame, size)
        self._bytes[source] = self._bytes.get(source, 0) + size
        if attempt_id is not None:
            self._inits.pop(attempt_id, None)  # Control heard it initialize: it prompted it
            self._last_of.pop(attempt_id, None)
            self._last_of[attempt_id] = (source, sequence)
            while len(self._last_of) > MAX_TRACKED:
                del self._last_of[next(iter(self._last_of))]

    def saved(self, source: str, sequence: int) -> None:
        """Record `sequence` of `source` is committed: it may be sent."""
        self._unsaved.discard((source, sequence))

    def acknowledge(self, source: str, through: int) -> None:
        """Control stored every record of `source` up to `through`: forget them."""
        if through <= self._acknowledged.get(source, 0):
            return
        self._acknowledged[source] = through
        frames = self._frames.get(source, {})
        for sequence in [s for s in frames if s <= through]:
            self._bytes[source] -= frames.pop(sequence)[1]
        self._sent[source] = max(self._sent.get(source, 0), through)

    def rewind(self) -> None:
        """A connection opened: everything unacknowledged is sent again on it, in order.
        Synchronous, so no record goes out on the new connection before this."""
        self._generation += 1
        for source in self._frames:
            self._sent[source] = self._acknowledged.get(source, 0)
        queued = {attempt for attempt, _, _ in self._waiting}
        self._waiting += [(a, f, False) for a, f in self._inits.items() if a not in queued]
        self._waiting += [(a, f, True) for a, f in self._exits.items() if a not in queued]

    async def flush(self) -> int:
        """Send every held record after its source's cursor; how many went out."""
        async with self._lock:
            return await self._flush_locked()

    def waiting_attempts(self) -> tuple[str, ...]:
        """Attempts whose exit Control may not have heard: still live to it."""
        return tuple(dict.fromkeys([*(a for a, _, _ in self._waiting), *self._exits]))

    async def send_after_records(self, attempt_id: str, frame: object, *,
                                 exit_frame: bool = False,
                                 initialized: bool = False) -> None:  # fmt: skip
        """Send a frame that is no record (a worker's phase) after every held record, so an
        attempt's `exited` never overtakes its turn's evidence; while the link is down it
        waits (bounded) and goes after the records on the next connection. An exit or an
        `initialized` is also sent again after each rewind (Control ignores a repeat)."""
        async with self._lock:
            if len(self._waiting) >= MAX_WAITING:
                log.warning("attempt %s: a phase frame not kept (%d wait); the next hello"
                            " reconciles it", attempt_id, MAX_WAITING)  # fmt: skip
                return
            self._waiting.append((attempt_id, frame, exit_frame))
            if initialized and not exit_frame:
                self._inits[attempt_id] = frame
                while len(self._inits) > MAX_TRACKED:
                    del self._inits[next(iter(self._inits))]
            if exit_frame:
                self._inits.pop(attempt_id, None)
                self._exit_due[attempt_id] = trio.current_time() + EXIT_ACK_WAIT_S
                self._exits[attempt_id] = frame
                while len(self._exits) > MAX_EXITS:
                    del self._exits[next(iter(self._exits))]
            await self._flush_locked()

    async def resend_all(self) -> int:
        """After a rewind: send the backlog, counting it as re-sent."""
        count = await self.flush()
        self.resent += count
        return count

    def _pending(self, source: str) -> list[int]:
        sent = self._sent.get(source, 0)
        return sorted(s for s in self._frames.get(source, {}) if s > sent)

    async def _flush_locked(self) -> int:
        count = 0
        generation = self._generation
        for source, frames in list(self._frames.items()):
            for sequence in self._pending(source):
                held = frames.get(sequence)
                if held is None:  # acknowledged while we sent
                    continue
                if (source, sequence) in self._unsaved:
                    break  # not committed yet: it and what follows go on a later flush
                if not await self._send(held[0]) or generation != self._generation:
                    return count  # the link is down or was replaced: the next rewind sends
                self._sent[source] = max(self._sent.get(source, 0), sequence)
                count += 1
        if self._unsaved:
            return count  # a phase frame goes only after every record before it
        for entry in list(self._waiting):  # phase frames, in order, once every record went
            attempt, frame, is_exit = entry
            if is_exit and not self._exit_ready(attempt):
                continue  # its turns' records are not acknowledged yet (the ack flushes)
            sent = await self._send(frame)
            if sent:  # never sent twice: a phase frame is not idempotent like a record
                self._waiting.remove(entry)
                if is_exit:
                    self._last_of.pop(attempt, None)
                    self._exit_due.pop(attempt, None)
            if not sent or generation != self._generation:
                return count
        return count

    def _exit_ready(self, attempt: str) -> bool:
        last = self._last_of.get(attempt)
        if last is None or self._acknowledged.get(last[0], 0) >= last[1]:
            return True
        return trio.current_time() >= self._exit_due.get(attempt, 0.0)
