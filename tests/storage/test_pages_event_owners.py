"""The journal's owner index keyed by owner numbers (issue 21 goal 4): each owner is numbered
once, at its first event, in the same transaction; sequences stay gap-free per owner across
rollbacks and pruning; reads by owner find the same events; and a database made by the
previous schema upgrades with every event numbered by its owner."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

import storage
from maia.core import FakeClock
from storage._schema import _PAGES_EVENT_OWNER_NUMBERS

from ._fixtures import schema_before


def _append(owner: str) -> storage.WriteFn[storage.EventRecord]:
    return lambda conn: storage.append_event(
        conn, owner_id=owner, event_type="test.happened", payload={}, now_ms=5
    )


def _numbers(conn: sqlite3.Connection) -> dict[str, int]:
    return dict(conn.execute("SELECT owner_id, owner_no FROM event_owners").fetchall())


def _mismatched(conn: sqlite3.Connection) -> int:
    """Events whose stored number is not their owner's."""
    return int(
        conn.execute(
            "SELECT count(*) FROM events e LEFT JOIN event_owners o ON o.owner_id = e.owner_id"
            " WHERE o.owner_no IS NOT e.owner_no"
        ).fetchone()[0]
    )


async def test_owners_are_numbered_once_and_reads_by_owner_use_the_numbers(
    tmp_path: Path,
) -> None:
    """Interleaved appends of two owners number each once, store the number on every event,
    and keep each owner's sequence 1, 2, 3; reads by owner (`read_owner_events`,
    `read_events(owner_id=)`) return exactly that owner's events; an owner without events
    reads none."""
    async with storage.open_storage(tmp_path / "m.db", clock=FakeClock()) as store:
        for owner in ("session_a", "session_b", "session_a", "session_b", "session_a"):
            await store.write(_append(owner))
        numbers = await store.read(_numbers)
        assert sorted(numbers) == ["session_a", "session_b"]
        assert await store.read(_mismatched) == 0
        mine = await store.read(lambda c: storage.read_owner_events(c, "session_a"))
        assert [(e.owner_id, e.owner_sequence) for e in mine] == [
            ("session_a", n) for n in (1, 2, 3)
        ]
        page = await store.read(lambda c: storage.read_events(c, owner_id="session_b"))
        assert [e.owner_sequence for e in page.events] == [1, 2]
        assert {e.owner_id for e in page.events} == {"session_b"}
        assert await store.read(lambda c: storage.read_owner_events(c, "session_none")) == ()


async def test_a_rolled_back_first_event_leaves_no_number_and_no_hole(tmp_path: Path) -> None:
    """A write that appends an owner's first event and then raises leaves neither the event
    nor the owner's number; the owner's next event is its sequence 1, numbered then."""

    def first_then_fail(conn: sqlite3.Connection) -> None:
        _append("session_new")(conn)
        raise RuntimeError("refused after appending")

    async with storage.open_storage(tmp_path / "m.db", clock=FakeClock()) as store:
        await store.write(_append("session_old"))
        with pytest.raises(RuntimeError):
            await store.write(first_then_fail)
        assert "session_new" not in await store.read(_numbers)
        event = await store.write(_append("session_new"))
        assert event.owner_sequence == 1
        assert "session_new" in await store.read(_numbers)
        assert await store.read(_mismatched) == 0


async def test_pruning_keeps_an_owners_number_and_sequence(tmp_path: Path) -> None:
    """After every event of an owner is pruned, its next event continues its sequence under
    the same number."""
    async with storage.open_storage(tmp_path / "m.db", clock=FakeClock()) as store:
        for _ in range(3):
            await store.write(_append("session_a"))
        number = (await store.read(_numbers))["session_a"]
        await store.write(lambda c: storage.prune_events(c, before_position=10))
        after = await store.write(_append("session_a"))
        assert after.owner_sequence == 4
        assert (await store.read(_numbers))["session_a"] == number


def _database_of_the_previous_schema(path: Path) -> None:
    """A database as the schema before this migration left it: events of two owners,
    interleaved, the first two pruned (their owner's head kept)."""
    conn = sqlite3.connect(path, isolation_level=None)
    schema_before(conn, _PAGES_EVENT_OWNER_NUMBERS)
    sequences = {"session_x": 0, "session_y": 0, "session_z": 0}
    owners = ("session_x", "session_y", "session_x", "session_y", "session_x", "session_z")
    for position, owner in enumerate(owners, 1):
        sequences[owner] += 1
        conn.execute(
            "INSERT INTO events (position, event_id, event_type, owner_type, owner_id,"
            " owner_seq, classification, occurred_ms, payload) VALUES (?, ?, 'test.happened',"
            " 'session', ?, ?, 'operator', 7, '{}')",
            (position, storage.positioned_id("event", position), owner, sequences[owner]),
        )
    conn.close()


async def test_the_migration_numbers_every_event_by_its_owner(tmp_path: Path) -> None:
    """Upgrading numbers each owner in order of its first event, stores the number on every
    event, keeps every event and sequence, reads by owner alike, continues each owner's
    sequence, and keeps the owner sequence unique."""
    path = tmp_path / "old.db"
    _database_of_the_previous_schema(path)
    async with storage.open_storage(path, clock=FakeClock()) as store:
        assert await store.read(_numbers) == {"session_x": 1, "session_y": 2, "session_z": 3}
        assert await store.read(_mismatched) == 0
        kept = (await store.read(lambda c: storage.read_events(c))).events
        assert [(e.position, e.owner_id, e.owner_sequence) for e in kept][:3] == [
            (1, "session_x", 1), (2, "session_y", 1), (3, "session_x", 2)
        ]  # fmt: skip
        xs = await store.read(lambda c: storage.read_owner_events(c, "session_x"))
        assert [e.position for e in xs] == [1, 3, 5]
        nxt = await store.write(_append("session_y"))
        assert (nxt.position, nxt.owner_sequence) == (7, 3)
        with pytest.raises(sqlite3.IntegrityError):
            await store.write(
                lambda c: c.execute(
                    "INSERT INTO events (event_id, event_type, owner_type, owner_id, owner_seq,"
                    " classification, occurred_ms, payload, owner_no) VALUES ('x', 't',"
                    " 'session', 'session_x', 2, 'operator', 1, '{}', 1)"
                )
            )
        indexes = await store.read(
            lambda c: {r[1] for r in c.execute("PRAGMA index_list('events')")}
        )
        assert indexes == {"events_by_legacy_id", "sqlite_autoindex_events_1"}
