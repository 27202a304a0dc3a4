"""The storage commit listener the observation hub rides on (real SQLite, real writer)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
import trio

from maia.core import SystemClock
from storage import EventRecord, append_event, open_storage


async def test_listener_sees_committed_events_once_in_order_and_never_rolled_back(
    tmp_path: Path,
) -> None:
    """Listeners get each committed event once, in journal order; rolled-back ones never."""
    seen: list[EventRecord] = []
    async with open_storage(tmp_path / "db.sqlite", clock=SystemClock()) as store:
        store.add_commit_listener(seen.extend)

        def good(conn: sqlite3.Connection, owner: str) -> int:
            return append_event(
                conn, owner_id=owner, event_type="x.done", payload={}, now_ms=1
            ).position

        def bad(conn: sqlite3.Connection) -> None:
            append_event(conn, owner_id="doomed", event_type="x.lost", payload={}, now_ms=1)
            raise ValueError("rolled back")

        async def ok(owner: str) -> None:
            await store.write(lambda c: good(c, owner))

        async def failing() -> None:
            with pytest.raises(ValueError, match="rolled back"):
                await store.write(bad)

        async with trio.open_nursery() as nursery:
            for index in range(50):
                nursery.start_soon(ok, f"owner{index % 5}")
                if index % 10 == 0:
                    nursery.start_soon(failing)
    assert len(seen) == 50
    assert [e.position for e in seen] == sorted(e.position for e in seen)
    assert all(e.event_type == "x.done" for e in seen)
    for owner in {e.owner_id for e in seen}:
        assert [e.owner_sequence for e in seen if e.owner_id == owner] == list(range(1, 11))


async def test_listener_runs_before_the_writer_is_answered_and_can_be_removed(
    tmp_path: Path,
) -> None:
    """When write() returns, listeners already saw its events; a removed listener sees no more."""
    seen: list[EventRecord] = []
    async with open_storage(tmp_path / "db.sqlite", clock=SystemClock()) as store:

        def broken(events: tuple[EventRecord, ...]) -> None:
            raise RuntimeError("a listener bug never breaks storage")

        store.add_commit_listener(broken)
        remove = store.add_commit_listener(seen.extend)
        record = await store.write(
            lambda c: append_event(c, owner_id="o", event_type="a", payload={"n": 1}, now_ms=1)
        )
        assert seen == [record]
        remove()
        await store.write(
            lambda c: append_event(c, owner_id="o", event_type="b", payload={}, now_ms=1)
        )
        assert seen == [record]
