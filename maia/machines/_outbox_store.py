"""The Execution Node's outbox on its own SQLite (table `machine_outbox`, through the
Node's storage actor): a record's frame is written, committed, before it is sent, and
deleted once Control acknowledges it cumulatively; at start the rows left are the records
Control never acknowledged, in sequence order per source (spec MN0's spool: sequences per
source from 1, cumulative acknowledgements, nothing dropped but by an acknowledgement).
"""

from __future__ import annotations

import sqlite3
from typing import Any

import attrs

from supervision.leases import EvidenceSpool

from ._frames import TO_CONTROL, decode_frame, encode_frame


@attrs.frozen
class KeptSource:
    """One source's counters as stored."""

    source_id: str
    last_sequence: int
    acknowledged_through: int


@attrs.frozen
class KeptRecord:
    """One unacknowledged record as stored: its frame, size and attempt."""

    source_id: str
    sequence: int
    frame: object
    size: int
    attempt_id: str | None


class OutboxStore:
    """Rows of `machine_outbox` through `storage` (a `storage.Storage`)."""

    def __init__(self, storage: Any) -> None:
        self._storage = storage

    async def put(self, source_id: str, sequence: int, frame: object, size: int,
                  attempt_id: str | None) -> None:  # fmt: skip
        """Keep one record durably (returns once committed)."""
        text = encode_frame(frame)

        def insert(conn: sqlite3.Connection) -> None:
            conn.execute("INSERT OR REPLACE INTO machine_outbox (source_id, sequence, frame,"
                         " size, attempt_id) VALUES (?, ?, ?, ?, ?)",
                         (source_id, sequence, text, size, attempt_id))  # fmt: skip
            conn.execute("INSERT INTO machine_outbox_sources VALUES (?, ?, 0) ON CONFLICT"
                         " (source_id) DO UPDATE SET last_sequence = max(last_sequence,"
                         " excluded.last_sequence)", (source_id, sequence))  # fmt: skip

        await self._storage.write(insert)

    async def release(self, source_id: str, through: int) -> None:
        """Control stored every record of `source_id` up to `through`: delete them."""

        def delete(conn: sqlite3.Connection) -> None:
            conn.execute("DELETE FROM machine_outbox WHERE source_id = ? AND sequence <= ?",
                         (source_id, through))  # fmt: skip
            conn.execute("UPDATE machine_outbox_sources SET acknowledged_through ="
                         " max(acknowledged_through, min(?, last_sequence)) WHERE source_id = ?",
                         (through, source_id))  # fmt: skip

        await self._storage.write(delete)

    async def load(self) -> tuple[list[KeptSource], list[KeptRecord]]:
        """Every source's counters, and every record left by source and sequence."""

        def select(conn: sqlite3.Connection) -> tuple[list[Any], list[Any]]:
            sources = conn.execute("SELECT source_id, last_sequence, acknowledged_through"
                                   " FROM machine_outbox_sources").fetchall()  # fmt: skip
            rows = conn.execute("SELECT source_id, sequence, frame, size, attempt_id FROM"
                                " machine_outbox ORDER BY source_id, sequence")  # fmt: skip
            return sources, rows.fetchall()

        sources, rows = await self._storage.read(select)
        return ([KeptSource(str(s), int(last), int(acked)) for s, last, acked in sources],
                [KeptRecord(str(source), int(sequence), decode_frame(frame, TO_CONTROL),
                            int(size), attempt) for source, sequence, frame, size, attempt
                 in rows])  # fmt: skip


def restored_spool(spool: EvidenceSpool, sources: list[KeptSource],
                   records: list[KeptRecord], now_ms: int) -> EvidenceSpool:  # fmt: skip
    """`spool` as the lease file left it, with the outbox's counters (the file is written
    on phase changes only, so its may be older) and the kept records' real sizes."""
    source = spool.source_id
    sizes = {r.sequence: r.size for r in records if r.source_id == source}
    stored = next((s for s in sources if s.source_id == source), None)
    if stored is None and not sizes:
        return spool
    last = max(spool.last_sequence, stored.last_sequence if stored else 0, max(sizes, default=0))
    acked = min(last, max(spool.acknowledged_through,
                          stored.acknowledged_through if stored else 0))  # fmt: skip
    held = tuple((seq, sizes.get(seq, 1), now_ms) for seq in range(acked + 1, last + 1))
    return EvidenceSpool(source, last, acked, acked, held, sum(size for _, size, _ in held))
