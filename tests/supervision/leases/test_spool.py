"""The evidence spool: contiguous sequences, acknowledged-only removal, bounded admission."""

from __future__ import annotations

import attrs
import pytest

from maia.core import MaiaError
from supervision.leases import (
    SPOOL_MAX_RECORDS,
    SPOOL_MAX_UNACKNOWLEDGED_AGE_MS,
    EvidenceSpool,
    EvidenceSpoolStatus,
    status_problem,
)


def test_sequences_are_contiguous_and_acknowledgement_truncates() -> None:
    """Records number 1, 2, 3; a cumulative ack removes exactly the covered ones."""
    spool = EvidenceSpool("s").append(10, 0).append(20, 1).append(30, 2)
    assert [r[0] for r in spool.records] == [1, 2, 3]
    spool = spool.acknowledge(2)
    status = spool.status(10)
    assert (status.truncated_through, status.acknowledged_through, status.last_sequence) == (
        2,
        2,
        3,
    )
    assert (status.retained_records, status.retained_bytes) == (1, 30)
    assert status.oldest_unacknowledged_age_ms == 8


def test_lower_and_excess_acknowledgements() -> None:
    """A lower ack changes nothing; an ack beyond the last record is clamped to it."""
    spool = EvidenceSpool("s").append(10, 0).acknowledge(1)
    assert spool.acknowledge(0) is spool
    clamped = EvidenceSpool("s").append(10, 0).acknowledge(5)
    assert clamped.acknowledged_through == 1
    assert clamped.status(0).retained_records == 0


def test_age_bound_stops_admission_and_never_drops() -> None:
    """An unacknowledged record reaching the age bound stops admission; it stays retained."""
    spool = EvidenceSpool("s").append(10, 0)
    assert spool.admission(SPOOL_MAX_UNACKNOWLEDGED_AGE_MS - 1) == "open"
    later = SPOOL_MAX_UNACKNOWLEDGED_AGE_MS
    assert spool.status(later).admission == "stopped"
    with pytest.raises(MaiaError) as caught:
        spool.append(1, later)
    assert caught.value.code == "held"
    assert spool.acknowledge(1).admission(later) == "open"


def test_record_bound_stops_admission() -> None:
    """The record quota stops admission at the bound; the status says stopped."""
    spool = EvidenceSpool(
        "s",
        records=tuple((i, 1, 0) for i in range(1, SPOOL_MAX_RECORDS + 1)),
        last_sequence=SPOOL_MAX_RECORDS,
        retained_bytes=SPOOL_MAX_RECORDS,
    )
    assert spool.status(0).admission == "stopped"


GOOD = EvidenceSpoolStatus("s", 5, 3, 2, 3, 30, 100, "open")


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"truncated_through": 4}, "truncatedThrough <= acknowledgedThrough"),
        ({"acknowledged_through": 6}, "truncatedThrough <= acknowledgedThrough"),
        ({"retained_records": 2}, "retainedRecords must equal"),
        ({"retained_bytes": 0}, "both zero or both positive"),
        ({"acknowledged_through": 5, "oldest_unacknowledged_age_ms": 1}, "must be 0"),
        ({"oldest_unacknowledged_age_ms": SPOOL_MAX_UNACKNOWLEDGED_AGE_MS}, "admission"),
    ],
)
def test_invalid_statuses_are_refused(change: dict[str, int], problem: str) -> None:
    """Each status invariant of the spec refuses the status that breaks it."""
    fields = {**attrs.asdict(GOOD), **change}
    with pytest.raises(ValueError, match=problem):
        EvidenceSpoolStatus(**fields)
    assert status_problem(GOOD) is None
