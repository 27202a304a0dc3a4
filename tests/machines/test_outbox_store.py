"""The durable outbox on a real SQLite file (through the storage actor, across two opens):
what a restart finds, and the spool it rebuilds from the rows and the counters."""

from __future__ import annotations

from pathlib import Path

import storage
from actors.machine import TurnEventFrame, WorkerFrame
from maia.core import FakeClock
from maia.machines import EvidenceOutbox, OutboxStore, restored_spool
from supervision.leases import EvidenceSpool

from .test_outbox import Wire


def _record(sequence: int, text: str) -> TurnEventFrame:
    return TurnEventFrame("turn_event", "attempt_a", "turn_a", "delta", "n.a", sequence, text,
                          None)  # fmt: skip


async def test_records_not_acknowledged_survive_a_reopen_in_order(tmp_path: Path) -> None:
    """Records 1-4 kept, 1-2 acknowledged, the database closed and opened again: 3 and 4
    come back, in order, with their frames and sizes, and the counters say 4 and 2."""
    path = tmp_path / "exec.db"
    async with storage.open_storage(path, clock=FakeClock()) as store:
        outbox = OutboxStore(store)
        await outbox.put("n.a", 1, WorkerFrame("worker", "attempt_a", "spawned", pid=7,
                                               sequence=1), 1, None)  # fmt: skip
        for sequence in (2, 3, 4):
            await outbox.put("n.a", sequence, _record(sequence, "x" * sequence), sequence,
                             "attempt_a")  # fmt: skip
        await outbox.release("n.a", 2)
    async with storage.open_storage(path, clock=FakeClock()) as store:
        sources, kept = await OutboxStore(store).load()
    assert [(s.source_id, s.last_sequence, s.acknowledged_through) for s in sources] == [
        ("n.a", 4, 2)
    ]
    assert [(r.sequence, r.size, r.attempt_id) for r in kept] == [
        (3, 3, "attempt_a"), (4, 4, "attempt_a")
    ]  # fmt: skip
    assert kept[0].frame == _record(3, "xxx")


async def test_an_acknowledgement_past_the_last_record_is_clamped(tmp_path: Path) -> None:
    """A cumulative ack above what was written deletes every row and records the last."""
    async with storage.open_storage(tmp_path / "exec.db", clock=FakeClock()) as store:
        outbox = OutboxStore(store)
        await outbox.put("n.a", 1, _record(1, "a"), 1, "attempt_a")
        await outbox.release("n.a", 9)
        sources, kept = await outbox.load()
    assert kept == []
    assert [(s.last_sequence, s.acknowledged_through) for s in sources] == [(1, 1)]


async def test_a_restored_spool_continues_after_the_outbox_counters(tmp_path: Path) -> None:
    """The lease file is older than the outbox (last 2, acked 0; the outbox says last 5,
    acked 3): the spool holds 4 and 5 with their real sizes, and the next record is 6, so
    no sequence Control stored is used again."""
    async with storage.open_storage(tmp_path / "exec.db", clock=FakeClock()) as store:
        outbox = OutboxStore(store)
        for sequence in range(1, 6):
            await outbox.put("n.a", sequence, _record(sequence, "y" * sequence), sequence,
                             "attempt_a")  # fmt: skip
        await outbox.release("n.a", 3)
        sources, kept = await outbox.load()
    stale = EvidenceSpool("n.a", 2, 0, 0, ((1, 1, 0), (2, 1, 0)), 2)
    spool = restored_spool(stale, sources, kept, 100)
    assert (spool.last_sequence, spool.acknowledged_through) == (5, 3)
    assert spool.records == ((4, 4, 100), (5, 5, 100))
    assert spool.retained_bytes == 9
    assert spool.append(1, 100).last_sequence == 6
    other = EvidenceSpool("n.b")
    assert restored_spool(other, sources, kept, 100) is other  # another source: unchanged


async def test_a_record_not_yet_committed_holds_back_itself_and_what_follows() -> None:
    """Record 2 kept unsaved: a flush sends 1 only (3 waits behind 2); once 2 is saved,
    the next flush sends 2 then 3, in order."""
    wire = Wire()
    sent = wire.sent
    outbox = EvidenceOutbox(wire.send)
    outbox.keep("s", 1, "r1")
    outbox.keep("s", 2, "r2", saved=False)
    outbox.keep("s", 3, "r3")
    await outbox.flush()
    assert sent == ["r1"]
    outbox.saved("s", 2)
    await outbox.flush()
    assert sent == ["r1", "r2", "r3"]


async def test_a_record_kept_after_later_ones_were_sent_still_goes_out() -> None:
    """Record 2 (a spawn record, kept once its process started) is kept after 3 was sent:
    the next flush sends 2, then 3 again (Control stores a copy no second time)."""
    wire = Wire()
    sent = wire.sent
    outbox = EvidenceOutbox(wire.send)
    outbox.keep("s", 1, "r1")
    outbox.keep("s", 3, "r3")
    await outbox.flush()
    outbox.keep("s", 2, "r2")
    await outbox.flush()
    assert sent == ["r1", "r3", "r2", "r3"]
