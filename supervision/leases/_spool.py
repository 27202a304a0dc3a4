"""The evidence spool: what a Node wrote for one source, until Control acknowledges it.

Sequences are per source and contiguous from 1, so a cumulative `acknowledgedThrough` is
unambiguous; `truncated <= acknowledged <= last` always. The Node removes only acknowledged
records and no age rule removes an unacknowledged one: a full spool stops admission instead
of dropping anything. `EvidenceSpoolStatus` is the wire shape (on `maia.core`'s schema system, like
`_schemas`) and refuses, when built or parsed, a status that would describe a silently
dropped record or a bound reached while admission stays open.
"""

# ruff: noqa: RUF009  (field() returns attrs.field: a field definition, not a shared default)

from __future__ import annotations

from typing import Literal

import attrs

from maia.core import CrossFieldError, MaiaError, field

from ._bounds import SPOOL_MAX_BYTES, SPOOL_MAX_RECORDS, SPOOL_MAX_UNACKNOWLEDGED_AGE_MS
from ._evolve import evolve
from ._fields import count, wire_id

Admission = Literal["open", "stopped"]


@attrs.frozen
class EvidenceSpoolStatus:
    """A Node's account of one source's spool; invalid combinations are refused.

    truncatedThrough <= acknowledgedThrough <= lastSequence; retainedRecords = lastSequence -
    truncatedThrough; records and bytes are both zero or both positive; the age is 0 once
    everything is acknowledged; a spool at a bound reports admission stopped.
    """

    source_id: str = wire_id("The evidence source this spool holds.")
    last_sequence: int = count("The last sequence written (contiguous from 1).", 0)
    acknowledged_through: int = count("Control's cumulative acknowledgement.", 0)
    truncated_through: int = count("Records up to here are removed.", 0)
    retained_records: int = count("Records held.", 0)
    retained_bytes: int = count("Bytes held.", 0)
    oldest_unacknowledged_age_ms: int = count("Age of the oldest unacknowledged record.", 0)
    admission: Admission = field(doc="stopped once any spool bound is reached.")

    def __attrs_post_init__(self) -> None:
        problem = _status_rule(self)
        if problem is not None:
            raise CrossFieldError(*problem)


def status_problem(status: EvidenceSpoolStatus) -> str | None:
    """Why a status is invalid, or None. Order: sequence relation, retention, bounds."""
    problem = _status_rule(status)
    return None if problem is None else f"{problem[0]}: {problem[1]}"


def _status_rule(status: EvidenceSpoolStatus) -> tuple[str, str] | None:
    """(wire field charged, why) of the first broken status rule, or None."""
    if not status.truncated_through <= status.acknowledged_through <= status.last_sequence:
        return (
            "acknowledgedThrough",
            "truncatedThrough <= acknowledgedThrough <= lastSequence does not hold",
        )
    if status.retained_records != status.last_sequence - status.truncated_through:
        return "retainedRecords", "retainedRecords must equal lastSequence - truncatedThrough"
    if (status.retained_records == 0) != (status.retained_bytes == 0):
        return (
            "retainedBytes",
            "retainedRecords and retainedBytes must be both zero or both positive",
        )
    caught_up = status.acknowledged_through == status.last_sequence
    if caught_up and status.oldest_unacknowledged_age_ms != 0:
        return (
            "oldestUnacknowledgedAgeMs",
            "oldestUnacknowledgedAgeMs must be 0 once everything is acknowledged",
        )
    if status.retained_records > SPOOL_MAX_RECORDS or status.retained_bytes > SPOOL_MAX_BYTES:
        over = "retainedRecords" if status.retained_records > SPOOL_MAX_RECORDS else "retainedBytes"
        return over, "the spool exceeds its record or byte quota"
    if status.admission == "open" and _at_bound(
        status.retained_records, status.retained_bytes, status.oldest_unacknowledged_age_ms
    ):
        return "admission", "a spool at its bound must report admission stopped"
    return None


def _at_bound(records: int, size: int, age_ms: int) -> bool:
    return (
        records >= SPOOL_MAX_RECORDS
        or size >= SPOOL_MAX_BYTES
        or age_ms >= SPOOL_MAX_UNACKNOWLEDGED_AGE_MS
    )


@attrs.frozen
class EvidenceSpool:
    """One source's retained records as (sequence, bytes, written monotonic ms)."""

    source_id: str
    last_sequence: int = 0
    acknowledged_through: int = 0
    truncated_through: int = 0
    records: tuple[tuple[int, int, int], ...] = ()
    retained_bytes: int = 0

    def admission(self, now_ms: int) -> Admission:
        """`stopped` once any bound is reached; nothing is ever dropped to reopen it."""
        return (
            "stopped"
            if _at_bound(len(self.records), self.retained_bytes, self._age(now_ms))
            else "open"
        )

    def append(self, size: int, now_ms: int) -> EvidenceSpool:
        """Record one piece of evidence. Raises `held` when admission is stopped."""
        if size <= 0:
            raise ValueError("evidence records have a positive size")
        if self.admission(now_ms) == "stopped" or self.retained_bytes + size > SPOOL_MAX_BYTES:
            raise MaiaError("held", f"admission is held: spool {self.source_id} is full")
        sequence = self.last_sequence + 1
        return evolve(
            self,
            last_sequence=sequence,
            records=(*self.records, (sequence, size, now_ms)),
            retained_bytes=self.retained_bytes + size,
        )

    def acknowledge(self, through: int) -> EvidenceSpool:
        """Apply a cumulative acknowledgement and drop what it covers.

        A lower or equal value changes nothing; a value above `last_sequence` acknowledges
        records this Node never wrote, so it is clamped (Control's contradiction check sees
        the gap in the next status, not the Node).
        """
        through = min(through, self.last_sequence)
        if through <= self.acknowledged_through:
            return self
        kept = tuple(record for record in self.records if record[0] > through)
        dropped = sum(record[1] for record in self.records if record[0] <= through)
        return evolve(
            self,
            acknowledged_through=through,
            truncated_through=through,
            records=kept,
            retained_bytes=self.retained_bytes - dropped,
        )

    def _age(self, now_ms: int) -> int:
        for sequence, _, written in self.records:
            if sequence > self.acknowledged_through:
                return max(0, now_ms - written)
        return 0

    def status(self, now_ms: int) -> EvidenceSpoolStatus:
        """The wire status at monotonic reading `now_ms`."""
        return EvidenceSpoolStatus(
            source_id=self.source_id,
            last_sequence=self.last_sequence,
            acknowledged_through=self.acknowledged_through,
            truncated_through=self.truncated_through,
            retained_records=len(self.records),
            retained_bytes=self.retained_bytes,
            oldest_unacknowledged_age_ms=self._age(now_ms),
            admission=self.admission(now_ms),
        )
