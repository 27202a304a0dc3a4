"""SQLITE_FULL in the middle of a request's appends (s8-cpu's journal heads: found safe).

The writer's connection is capped (`PRAGMA max_page_count`) at the pages it has, so a request
appending large events for a kept owner meets SQLITE_FULL after some of them stored; SQLite
rolls the whole transaction back and the batch fails `unavailable`. The owner's next event,
the cap lifted, takes the position and sequence after the committed ones.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
import trio

import storage
from maia.core import FakeClock, MaiaError


def _append(conn: sqlite3.Connection, owner: str, size: int = 0) -> tuple[int, int]:
    event = storage.append_event(
        conn, owner_id=owner, event_type="t", payload={"pad": "x" * size}, now_ms=5
    )
    return event.position, event.owner_sequence


def _until_full(conn: sqlite3.Connection) -> None:
    """Cap the file at its pages and append 8 KiB events for session_a until SQLite refuses."""
    (pages,) = conn.execute("PRAGMA page_count").fetchone()
    conn.execute(f"PRAGMA max_page_count = {pages + 4}")
    try:
        for _ in range(1000):
            _append(conn, "session_a", 8192)
    finally:
        conn.execute("PRAGMA max_page_count = 1073741823")
    raise AssertionError("never full")  # pragma: no cover


async def test_a_full_database_mid_request(tmp_path: Path) -> None:
    """A request failing with SQLITE_FULL after some appends leaves the kept owner's next
    event right after its committed one."""
    path = tmp_path / "f.db"
    with trio.fail_after(60):
        async with storage.open_storage(path, clock=FakeClock()) as store:
            assert await store.write(lambda conn: _append(conn, "session_a")) == (1, 1)
            with pytest.raises(MaiaError) as full:  # SQLite rolled the transaction back
                await store.write(_until_full)
            assert full.value.code == "unavailable"
            assert await store.write(lambda conn: _append(conn, "session_a")) == (2, 2)
    with sqlite3.connect(path) as conn:
        rows = list(conn.execute("SELECT position, owner_id, owner_seq FROM events ORDER BY 1"))
    assert rows == [(1, "session_a", 1), (2, "session_a", 2)]
