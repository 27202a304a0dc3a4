"""The lean schema of issue 21 (goal 4): the queries the hot path runs still search an index,
the indexes it never read are gone, pruning works without them, and the journal without
AUTOINCREMENT never hands a position out twice, also across the migration."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import storage
from maia.core import FakeClock, digest_json
from storage._events import LEGACY_EVENT_IDS
from storage._receipts import LEGACY_RECEIPT_IDS
from storage._schema import _PERF_STORE_LEAN_INDEXES

from ._fixtures import create_session_apply, schema_before, seed_project, session_row

# The Node's hot-path reads, as storage and the Session actor run them (parameters bound to
# sample values), and the index each must search.
_HOT_QUERIES = {
    "find_receipt": (
        "SELECT * FROM receipts WHERE actor_id = 'a' AND operation_id = 'o' AND command_id = 'c'",
        "sqlite_autoindex_receipts_1",
    ),
    "command_correlation": (
        "SELECT r.correlation_id FROM turns t JOIN receipts r ON r.sequence = t.send_receipt"
        " WHERE t.turn_id = 't' AND r.operation_id = 'o'",
        "sqlite_autoindex_turns_1",
    ),
    "command_correlation_unclaimed": (
        "SELECT correlation_id FROM receipts WHERE target_id = 't' AND operation_id = 'o'"
        " ORDER BY rowid LIMIT 1",
        "receipts_by_target",
    ),
    "get_receipt_by_legacy_id": (
        f"SELECT * FROM receipts WHERE receipt_id = 'r' AND {LEGACY_RECEIPT_IDS}",
        "receipts_by_legacy_id",
    ),
    "owner_sequence": (
        "SELECT max(owner_seq) FROM events WHERE owner_no = 3",
        "sqlite_autoindex_events_1",
    ),
    "owner_number": (
        "SELECT owner_no FROM event_owners WHERE owner_id = 's'",
        "sqlite_autoindex_event_owners_1",
    ),
    "event_by_legacy_id": (
        f"SELECT position FROM events WHERE event_id = 'e' AND {LEGACY_EVENT_IDS}",
        "events_by_legacy_id",
    ),
    "next_turn_seq": (
        "SELECT coalesce(max(seq), 0) + 1 FROM turns WHERE session_id = 's'",
        "sqlite_autoindex_turns_2",
    ),
    "pending_turns": (
        "SELECT turn_id FROM turns WHERE session_id = 's' AND seq >= 4"
        " AND state IN ('queued', 'running') ORDER BY seq",
        "sqlite_autoindex_turns_2",
    ),
    "sessions_of_a_project": (
        "SELECT rowid FROM sessions WHERE project_id = 'p' ORDER BY rowid DESC LIMIT 50",
        "sessions_by_project_id",
    ),
}
_DROPPED = (
    "sessions_by_project",
    "sessions_by_state",
    "receipts_by_operation",
    "receipts_by_time",
    "turns_by_state",
    "turns_unfinished",
)


def _plan(conn: sqlite3.Connection, sql: str) -> str:
    return " | ".join(row[3] for row in conn.execute(f"EXPLAIN QUERY PLAN {sql}"))


async def test_hot_queries_search_an_index_and_the_unread_indexes_are_gone(
    tmp_path: Path,
) -> None:
    """Each hot-path query's plan searches its index (no scan, no sort); the indexes
    nothing on the hot path read no longer exist, and the journal has no AUTOINCREMENT."""
    async with storage.open_storage(tmp_path / "m.db", clock=FakeClock()):
        pass
    conn = sqlite3.connect(tmp_path / "m.db")
    try:
        for name, (sql, index) in _HOT_QUERIES.items():
            plan = _plan(conn, sql)
            assert f"USING INDEX {index}" in plan or f"USING COVERING INDEX {index}" in plan, (
                name,
                plan,
            )
            assert "SCAN" not in plan, (name, plan)
            assert "TEMP B-TREE" not in plan, (name, plan)
        indexes = {r[0] for r in conn.execute("SELECT name FROM sqlite_schema WHERE type='index'")}
        assert indexes.isdisjoint(_DROPPED)
        events_sql = conn.execute("SELECT sql FROM sqlite_schema WHERE name = 'events'").fetchone()
        assert "AUTOINCREMENT" not in events_sql[0]
    finally:
        conn.close()


async def test_prune_receipts_deletes_the_oldest_up_to_the_first_young_one(
    tmp_path: Path,
) -> None:
    """Pruning deletes the receipts older than the retention in rowid order and stops at the
    first young one: one written after it with an older clock (stepped back) is kept."""
    day = 24 * 3600 * 1000
    now = 100 * day
    async with storage.open_storage(tmp_path / "m.db", clock=FakeClock()) as store:
        await store.write(seed_project)
        # created_ms in rowid order: 1 and 2 days (old), 90 days (young), 3 days (old, but
        # after a young one: a clock that stepped back).
        for number, created in enumerate((1 * day, 2 * day, 90 * day, 3 * day)):
            row = session_row()
            key = storage.MutationKey("actor_local_user", "session.create", f"cmd-{number}")

            def run(c: sqlite3.Connection, key: storage.MutationKey = key,
                    row: storage.SessionRow = row, created: int = created) -> object:  # fmt: skip
                return storage.run_mutation(
                    c, key=key, input_digest=digest_json({"n": key.command_id}),
                    now_ms=created, apply=create_session_apply(row, created),
                )  # fmt: skip

            await store.write(run)
        deleted = await store.write(lambda c: storage.prune_receipts(c, now_ms=now))
        assert deleted == 2
        kept = await store.read(lambda c: storage.list_receipts(c))
        assert [r.command_id for r in kept] == ["cmd-2", "cmd-3"]
        # Once the young one ages out, the one behind it goes too.
        deleted = await store.write(lambda c: storage.prune_receipts(c, now_ms=now + 60 * day))
        assert deleted == 2
        assert await store.read(lambda c: storage.list_receipts(c)) == ()


def _append(owner: str) -> storage.WriteFn[storage.EventRecord]:
    return lambda conn: storage.append_event(
        conn, owner_id=owner, event_type="test.happened", payload={}, now_ms=5
    )


async def test_a_journal_pruned_empty_never_hands_a_position_out_twice(tmp_path: Path) -> None:
    """After pruning every event, the next one takes the oldest retained position (after the
    pruned ones), and the owner's sequence continues."""
    async with storage.open_storage(tmp_path / "m.db", clock=FakeClock()) as store:
        first = [await store.write(_append("session_a")) for _ in range(3)]
        assert [e.position for e in first] == [1, 2, 3]
        await store.write(lambda c: storage.prune_events(c, before_position=10))
        after = await store.write(_append("session_a"))
        assert (after.position, after.owner_sequence) == (10, 4)
        following = await store.write(_append("session_b"))
        assert following.position == 11


def _database_before_the_rebuild(path: Path) -> None:
    """A database as the Maia before these migrations left it: its journal held positions
    1-5 under AUTOINCREMENT, all pruned but the last two, then all of them."""
    conn = sqlite3.connect(path, isolation_level=None)
    schema_before(conn, _PERF_STORE_LEAN_INDEXES)
    for seq in range(1, 6):
        conn.execute(
            "INSERT INTO events (event_id, event_type, owner_type, owner_id, owner_seq,"
            " classification, occurred_ms, payload) VALUES (?, 'test.happened', 'session',"
            " 'session_old', ?, 'operator', 7, '{}')",
            (f"event_old_{seq}", seq),
        )
    conn.close()


async def test_the_migration_keeps_events_and_the_journal_high_water_mark(tmp_path: Path) -> None:
    """Migrating an AUTOINCREMENT journal keeps its events and positions; pruned empty
    before or after the migration, the next position is still above every old one."""
    kept = tmp_path / "kept.db"
    _database_before_the_rebuild(kept)
    async with storage.open_storage(kept, clock=FakeClock()) as store:
        old = (await store.read(lambda c: storage.read_events(c))).events
        assert [(e.position, e.event_id) for e in old][-1] == (5, "event_old_5")
        assert (await store.write(_append("session_old"))).position == 6
    emptied = tmp_path / "emptied.db"
    _database_before_the_rebuild(emptied)
    conn = sqlite3.connect(emptied, isolation_level=None)
    conn.execute("DELETE FROM events")  # pruned empty under AUTOINCREMENT, marker left at 1
    conn.close()
    async with storage.open_storage(emptied, clock=FakeClock()) as store:
        appended = await store.write(_append("session_new"))
        assert appended.position == 6
        assert await store.read(storage.oldest_retained_position) == 6
        indexes = await store.read(
            lambda c: {r[0] for r in c.execute("SELECT name FROM sqlite_schema")}
        )
        assert indexes.isdisjoint(_DROPPED)
        assert "sessions_by_project_id" in indexes
