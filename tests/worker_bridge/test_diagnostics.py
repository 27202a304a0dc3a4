"""The diagnostic queue: bounded by records and bytes, batches bounded, drops reported once."""

from __future__ import annotations

import worker_bridge as wb


def test_batches_hold_at_most_128_records() -> None:
    """300 small records come out as batches of 128, 128 and 44."""
    queue = wb.DiagnosticQueue()
    for i in range(300):
        assert queue.push({"i": i})
    sizes = []
    while (batch := queue.take_batch()) is not None:
        sizes.append(len(batch[0]))
    assert sizes == [128, 128, 44]


def test_batches_hold_at_most_512_kib() -> None:
    """Records of ~100 KiB come five to a batch (512 KiB bound)."""
    queue = wb.DiagnosticQueue()
    for _ in range(7):
        queue.push({"blob": "x" * 100_000})
    first = queue.take_batch()
    assert first is not None
    assert len(first[0]) == 5
    assert len(wb.encode(first[0])) <= wb.MAX_BATCH_BYTES


def test_overflow_drops_and_reports_the_count_in_the_next_batch_only() -> None:
    """Past 2,048 records new ones are dropped; the next batch says how many, then zero."""
    queue = wb.DiagnosticQueue()
    accepted = sum(queue.push({"i": i}) for i in range(2100))
    assert accepted == wb.MAX_DIAGNOSTIC_RECORDS
    assert queue.dropped == 52
    first = queue.take_batch()
    assert first is not None
    assert first[1] == 52
    second = queue.take_batch()
    assert second is not None
    assert second[1] == 0


def test_byte_bound_applies_before_the_record_bound() -> None:
    """A queue bounded at 1 MiB refuses records once their bytes would pass it."""
    queue = wb.DiagnosticQueue(max_bytes=1024 * 1024)
    accepted = sum(queue.push({"b": "y" * 200_000}) for _ in range(10))
    assert accepted == 5
    assert queue.queued_bytes <= 1024 * 1024
