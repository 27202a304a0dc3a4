"""The writer's sub-journal (what a guarded request's savepoint copies): SQLite's file-backed
kind, which keeps up to 64 KiB in memory in one chunk and spills past it, instead of the
in-memory kind's 1 KiB chunks (temp_store = FILE; docs/performance.md, "Session 11")."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import storage
from maia.core import FakeClock

from .test_replayable import _one_batch

ROWS = 300  # ~300 KiB of rows: a savepoint over them copies far past 64 KiB


def _temp_store(conn: sqlite3.Connection) -> int:
    return int(conn.execute("PRAGMA temp_store").fetchone()[0])


async def test_the_writer_keeps_its_sub_journal_on_file_store(tmp_path: Path) -> None:
    """The writer's connection runs with temp_store = FILE (1), not MEMORY (2)."""
    async with storage.open_storage(tmp_path / "t.db", clock=FakeClock()) as store:
        assert await store.write(_temp_store) == 1


def _fill(conn: sqlite3.Connection) -> int:
    conn.executemany(
        "INSERT INTO counters (name, value) VALUES (?, 1)",
        [(f"row{i:04d}" + "x" * 1000,) for i in range(ROWS)],
    )
    return storage.append_event(
        conn, owner_id="session_f", event_type="filled", payload={}, now_ms=1
    ).owner_sequence


def _touch_all_then_fail(conn: sqlite3.Connection) -> int:
    # Every page the batch's first request changed, changed again inside this request's
    # savepoint: its sub-journal outgrows 64 KiB and spills to a temporary file.
    conn.execute("UPDATE counters SET value = value + 1 WHERE name LIKE 'row%'")
    storage.append_event(conn, owner_id="session_f", event_type="lost", payload={}, now_ms=1)
    raise ValueError("this request fails after changing every row")


def _after(conn: sqlite3.Connection) -> int:
    conn.execute(
        "UPDATE counters SET value = value + 10 WHERE name = 'row0000' || ?", ("x" * 1000,)
    )
    return storage.append_event(
        conn, owner_id="session_f", event_type="after", payload={}, now_ms=1
    ).owner_sequence


async def test_a_guarded_request_past_64_kib_of_sub_journal_rolls_back_alone(
    tmp_path: Path,
) -> None:
    """In one batch: a request fills ~300 KiB of rows; a guarded one changes all of them and
    fails; a third changes one. The failed one's changes and event are gone, the others'
    kept, the owner's sequence has no hole."""
    async with storage.open_storage(tmp_path / "s.db", clock=FakeClock()) as store:
        results = await _one_batch(store, [
            ("fill", _fill, False),
            ("bad", _touch_all_then_fail, False),
            ("after", _after, False),
        ], in_order=True)  # fmt: skip
        stats = store.statistics()
    assert stats.max_batch_size == 3
    assert results["fill"] == 1
    assert isinstance(results["bad"], ValueError)
    assert results["after"] == 2
    with sqlite3.connect(tmp_path / "s.db") as conn:
        values = dict(conn.execute("SELECT substr(name, 1, 7), value FROM counters"))
        events = conn.execute("SELECT event_type, owner_seq FROM events ORDER BY position")
        journal = events.fetchall()
    assert values.pop("row0000") == 11
    assert len(values) == ROWS - 1 + 1  # the other rows, and worker_epoch
    assert all(value == 1 for name, value in values.items() if name.startswith("row"))
    assert journal == [("filled", 1), ("after", 2)]
