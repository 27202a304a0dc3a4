"""What Control took of each evidence source (one spool per assignment, shared by every
Session placed under it): the cumulative acknowledgement it may send.

Two Sessions of one Project on one machine share the spool, and their records interleave
(A's record 5, B's record 6). Each Session actor takes its own records in its own time, so
"B's actor took 6" must not acknowledge 5 while A's actor has not taken it: the Node would
drop a record Control never wrote. The ledger acknowledges through the highest sequence
below which every record is settled: taken by its actor, or dropped by Control on purpose
(a replay, a turn no handle runs, an attempt this Control does not run). A record that never
arrived (lost in flight) holds the acknowledgement back until it does. Pure; no I/O.
"""

from __future__ import annotations

from typing import Final

import attrs

MAX_OPEN: Final = 65_536  # records held open per source (bounded like the spool itself)


@attrs.define
class SourceLedger:
    """One source: `through` is acknowledged (or acknowledgeable); `waiting` were handed to a
    Session actor and not taken yet; `settled` are done above `through`."""

    # None: nothing known yet. The first record this run sees sets it: a Node sends again
    # from its own acknowledgement, and the spool's reported counter is no guide (a grant
    # moves it by what the Node reported written, not by what Control stored).
    through: int | None = None
    waiting: set[int] = attrs.field(factory=set)
    settled: set[int] = attrs.field(factory=set)

    def received(self, sequence: int, *, kept: bool) -> bool:
        """Record `sequence` arrived; `kept` when a Session actor will take it. False for a
        record already known (a replay): nothing changes."""
        if self.through is None:
            self.through = sequence - 1
        if sequence <= self.through or sequence in self.waiting or sequence in self.settled:
            return False
        if len(self.waiting) + len(self.settled) >= MAX_OPEN:
            raise OverflowError(f"more than {MAX_OPEN} evidence records open")
        (self.waiting if kept else self.settled).add(sequence)
        return True

    def taken(self, sequence: int) -> None:
        """Its Session actor wrote record `sequence`."""
        if sequence in self.waiting:
            self.waiting.discard(sequence)
            self.settled.add(sequence)

    def advance(self) -> int | None:
        """Move `through` over the settled run after it; the new value, or None if it did
        not move."""
        if self.through is None:
            return None
        start = self.through
        while self.through + 1 in self.settled:
            self.through += 1
            self.settled.discard(self.through)
        return self.through if self.through > start else None


@attrs.define
class EvidenceLedger:
    """Every source's ledger, by source ID (`<machine>.<assignment>`)."""

    sources: dict[str, SourceLedger] = attrs.field(factory=dict)

    def of(self, source_id: str) -> SourceLedger:
        return self.sources.setdefault(source_id, SourceLedger())

    def taken_through(self, source_id: str) -> int:
        """How far a grant may acknowledge `source_id` (0 while nothing is known)."""
        found = self.sources.get(source_id)
        return 0 if found is None or found.through is None else found.through
