"""Event IDs that carry their journal position (issue 21 goal 4): the journal keeps no index of
event IDs, a look-up by ID still finds every retained event (new and from before the
migration), a rolled-back event leaves neither an ID nor a hole, and a database made by the
previous schema upgrades with its events intact."""

from __future__ import annotations

import functools
import sqlite3
from pathlib import Path

import pytest

import storage
from maia.core import FakeClock
from storage._events import LEGACY_EVENT_IDS
from storage._schema import _PAGES_EVENT_ID_FROM_POSITION

from ._fixtures import schema_before


def _append(owner: str) -> storage.WriteFn[storage.EventRecord]:
    return lambda conn: storage.append_event(
        conn, owner_id=owner, event_type="test.happened", payload={"n": 1}, now_ms=5
    )


def test_positioned_ids_round_trip_and_refuse_other_strings() -> None:
    """`id_position` reads back the position of a `positioned_id` of the same prefix and
    None for anything else: a time-led ID, another prefix, upper case, a short tail."""
    made = storage.positioned_id("event", 4242)
    assert storage.id_position("event", made) == 4242
    assert len(made) == 56
    assert made.startswith("event_f")
    assert storage.id_position("receipt", made) is None
    assert storage.id_position("event", storage.new_ordered_id("event")) is None
    assert storage.id_position("event", made.upper()) is None
    assert storage.id_position("event", made[:-1]) is None
    assert storage.id_position("event", "event_f" + "0" * 49) is None  # position 0
    with pytest.raises(ValueError, match="position"):
        storage.positioned_id("event", 0)


async def test_an_event_is_found_by_its_id_without_an_index_of_ids(tmp_path: Path) -> None:
    """Appended events get IDs carrying their positions; `event_position` and
    `event_correlation` find them by the row's key; an ID that is not kept reads None;
    the only index on event IDs is the partial one of older IDs."""
    async with storage.open_storage(tmp_path / "m.db", clock=FakeClock()) as store:
        events = [await store.write(_append("session_a")) for _ in range(3)]
        for event in events:
            assert storage.id_position("event", event.event_id) == event.position
            assert await store.read(
                functools.partial(storage.event_position, event_id=event.event_id)
            ) == (event.position)
            assert await store.read(
                functools.partial(storage.event_correlation, event_id=event.event_id)
            )
        forged = storage.positioned_id("event", events[0].position)  # right row, other tail
        assert await store.read(lambda c: storage.event_position(c, forged)) is None
        assert await store.read(lambda c: storage.event_position(c, "event_missing")) is None
        indexed = await store.read(
            lambda c: [r[0] for r in c.execute("SELECT name FROM pragma_index_list('events')")]
        )
    assert sorted(indexed) == ["events_by_legacy_id", "sqlite_autoindex_events_1"]


async def test_a_rolled_back_event_leaves_no_id_and_no_hole(tmp_path: Path) -> None:
    """A write that appends and then raises leaves nothing: its position and owner sequence
    go to the next event (no gap), and its ID is not found."""
    rolled_back: list[storage.EventRecord] = []

    def append_then_fail(conn: sqlite3.Connection) -> None:
        rolled_back.append(_append("session_a")(conn))
        raise RuntimeError("refused after appending")

    async with storage.open_storage(tmp_path / "m.db", clock=FakeClock()) as store:
        first = await store.write(_append("session_a"))
        with pytest.raises(RuntimeError):
            await store.write(append_then_fail)
        second = await store.write(_append("session_a"))
        assert (second.position, second.owner_sequence) == (first.position + 1, 2)
        assert rolled_back[0].position == second.position
        assert rolled_back[0].event_id != second.event_id
        gone = rolled_back[0].event_id
        assert await store.read(lambda c: storage.event_position(c, gone)) is None


def _database_of_the_previous_schema(path: Path) -> list[str]:
    """A database as the schema before this migration left it, with three events under
    time-led IDs and one under a 32-digit random ID (registry < 0.9.0); their IDs."""
    conn = sqlite3.connect(path, isolation_level=None)
    schema_before(conn, _PAGES_EVENT_ID_FROM_POSITION)
    ids = [storage.new_ordered_id("event") for _ in range(3)] + ["event_" + "f" * 32]
    for seq, event_id in enumerate(ids, 1):
        conn.execute(
            "INSERT INTO events (event_id, event_type, owner_type, owner_id, owner_seq,"
            " classification, occurred_ms, payload, correlation_id) VALUES (?, 'test.happened',"
            " 'session', 'session_old', ?, 'operator', 7, '{}', ?)",
            (event_id, seq, f"corr-{seq}"),
        )
    conn.close()
    return ids


async def test_the_migration_keeps_old_events_findable_by_their_ids(tmp_path: Path) -> None:
    """Upgrading a database of the previous schema keeps every event, position and ID; each
    old ID is still found (through the partial index of old IDs, which the plan uses); the
    next event continues the positions and the owner's sequence with a positioned ID, and
    the owner sequence stays unique."""
    path = tmp_path / "old.db"
    old_ids = _database_of_the_previous_schema(path)
    async with storage.open_storage(path, clock=FakeClock()) as store:
        kept = (await store.read(lambda c: storage.read_events(c))).events
        assert [(e.position, e.event_id) for e in kept] == list(enumerate(old_ids, 1))
        for position, event_id in enumerate(old_ids, 1):
            assert (
                await store.read(functools.partial(storage.event_position, event_id=event_id))
                == position
            )
            correlation = await store.read(
                functools.partial(storage.event_correlation, event_id=event_id)
            )
            assert correlation == f"corr-{position}"
        appended = await store.write(_append("session_old"))
        assert (appended.position, appended.owner_sequence) == (5, 5)
        assert storage.id_position("event", appended.event_id) == 5
        plan = await store.read(
            lambda c: " ".join(
                r[3]
                for r in c.execute(
                    "EXPLAIN QUERY PLAN SELECT position FROM events WHERE event_id = ? AND "
                    + LEGACY_EVENT_IDS,
                    (old_ids[0],),
                )
            )
        )
        assert "events_by_legacy_id" in plan
        with pytest.raises(sqlite3.IntegrityError):
            await store.write(
                lambda c: c.execute(
                    "INSERT INTO events (event_id, event_type, owner_type, owner_id, owner_seq,"
                    " classification, occurred_ms, payload) VALUES ('x', 't', 'session',"
                    " 'session_old', 5, 'operator', 1, '{}')"
                )
            )
        indexed = await store.read(
            lambda c: {r[0] for r in c.execute("SELECT name FROM pragma_index_list('events')")}
        )
        assert indexed == {"events_by_legacy_id", "sqlite_autoindex_events_1"}
