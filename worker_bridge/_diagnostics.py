"""The worker's one diagnostic queue: bounded, coalesced into observation-batch frames.

Diagnostics are not authoritative: when the queue is full (2,048 records or 8 MiB) new
records are dropped and counted, and the next batch reports the count in `dropped` so the
Node can record an authoritative gap. Batches hold at most 128 records or 512 KiB and are
sent without waiting for an ack. Sans-IO: the SDK decides when to take a batch.
"""

from __future__ import annotations

from collections import deque

from ._json import encode
from ._limits import (
    MAX_BATCH_BYTES,
    MAX_BATCH_RECORDS,
    MAX_DIAGNOSTIC_BYTES,
    MAX_DIAGNOSTIC_RECORDS,
)

# typing costs a worker ~20 ms of start-up: import it for the type checker only.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class DiagnosticQueue:
    """Records wait here until `take_batch` coalesces them into one batch."""

    def __init__(
        self,
        max_records: int = MAX_DIAGNOSTIC_RECORDS,
        max_bytes: int = MAX_DIAGNOSTIC_BYTES,
        batch_records: int = MAX_BATCH_RECORDS,
        batch_bytes: int = MAX_BATCH_BYTES,
    ) -> None:
        self._records: deque[tuple[dict[str, Any], int]] = deque()
        self._bytes = 0
        self._dropped = 0
        self._max_records = max_records
        self._max_bytes = max_bytes
        self._batch_records = batch_records
        self._batch_bytes = batch_bytes

    def push(self, record: dict[str, Any]) -> bool:
        """Queue `record`; False (and counted as dropped) when the queue is full or the
        record alone is larger than a batch. Raises `TypeError`/`ValueError` for non-JSON."""
        size = len(encode(record)) + 1
        if (
            size > self._batch_bytes
            or len(self._records) >= self._max_records
            or self._bytes + size > self._max_bytes
        ):
            self._dropped += 1
            return False
        self._records.append((record, size))
        self._bytes += size
        return True

    def take_batch(self) -> tuple[list[dict[str, Any]], int] | None:
        """The next batch's records and the drop count to report, or None when there is
        nothing to say. The drop count resets once taken."""
        if not self._records and not self._dropped:
            return None
        records: list[dict[str, Any]] = []
        used = 2  # the list's brackets
        while self._records and len(records) < self._batch_records:
            record, size = self._records[0]
            if used + size > self._batch_bytes:
                break
            self._records.popleft()
            self._bytes -= size
            used += size
            records.append(record)
        dropped, self._dropped = self._dropped, 0
        return records, dropped

    def __len__(self) -> int:
        return len(self._records)

    @property
    def queued_bytes(self) -> int:
        return self._bytes

    @property
    def dropped(self) -> int:
        """Records dropped since the last batch."""
        return self._dropped
