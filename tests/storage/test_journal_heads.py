"""The writer's journal heads (storage/_heads.py): an append without a read, and still exact."""

from __future__ import annotations

import sqlite3
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import storage
from maia.core import FakeClock
from storage._heads import MAX_OWNERS, JournalHeads, use_heads
from storage._schema import migrate

from .test_replayable import _one_batch, _owned, _Runs

OWNERS = ("session_a", "session_b", "session_c")


def _append(conn: sqlite3.Connection, owner: str) -> storage.EventRecord:
    return storage.append_event(
        conn, owner_id=owner, event_type="test.happened", payload={"o": owner}, now_ms=5
    )


def _journal(conn: sqlite3.Connection) -> list[tuple[int, str, str, int]]:
    """Every event as (position, the position its ID carries, owner, owner sequence)."""
    rows = conn.execute("SELECT position, event_id, owner_id, owner_seq FROM events ORDER BY 1")
    return [(p, str(storage.id_position("event", i)), o, s) for p, i, o, s in rows]


@contextmanager
def _database(folder: Path, name: str) -> Iterator[sqlite3.Connection]:
    conn = sqlite3.connect(folder / name, isolation_level=None)
    try:
        migrate(conn, folder / name)
        yield conn
    finally:
        conn.close()


def _statements(conn: sqlite3.Connection, work: object) -> list[str]:
    traced: list[str] = []
    conn.set_trace_callback(traced.append)
    try:
        assert callable(work)
        work()
    finally:
        conn.set_trace_callback(None)
    return traced


def test_a_known_owner_appends_with_one_statement(tmp_path: Path) -> None:
    """With heads kept, an owner's second event is one INSERT (no read of the heads first),
    and its position and sequence are those a read would give."""
    with _database(tmp_path, "m.db") as conn:
        heads = JournalHeads(conn)
        use_heads(heads)
        try:
            conn.execute("BEGIN IMMEDIATE")
            first = _append(conn, "session_a")
            traced = _statements(conn, lambda: _append(conn, "session_a"))
            conn.execute("COMMIT")
        finally:
            use_heads(None)
        assert [t.split()[0] for t in traced] == ["INSERT"]
        second = _journal(conn)[-1]
        assert second == (first.position + 1, str(first.position + 1), "session_a", 2)


def test_an_unknown_owner_or_a_new_journal_reads_first(tmp_path: Path) -> None:
    """The first event of an owner (or of the journal) reads the heads, as without them."""
    with _database(tmp_path, "m.db") as conn:
        use_heads(JournalHeads(conn))
        try:
            conn.execute("BEGIN IMMEDIATE")
            traced = _statements(conn, lambda: _append(conn, "session_a"))
            later = _statements(conn, lambda: _append(conn, "session_b"))
            conn.execute("COMMIT")
        finally:
            use_heads(None)
        assert traced[0].startswith("SELECT")
        assert later[0].startswith("SELECT")


def test_heads_of_another_connection_are_not_used(tmp_path: Path) -> None:
    """Heads kept for one connection leave another connection's appends reading the journal."""
    with _database(tmp_path, "a.db") as one, _database(tmp_path, "b.db") as other:
        use_heads(JournalHeads(one))
        try:
            _append(one, "session_a")
            _append(other, "session_a")
            traced = _statements(other, lambda: _append(other, "session_a"))
        finally:
            use_heads(None)
        assert traced[0].startswith("SELECT")
        assert [row[3] for row in _journal(other)] == [1, 2]


def test_the_owner_map_is_bounded(tmp_path: Path) -> None:
    """Past MAX_OWNERS owners the map starts again (an owner not kept reads its head)."""
    with _database(tmp_path, "m.db") as conn:
        heads = JournalHeads(conn)
        for number in range(MAX_OWNERS + 10):
            heads.noted(f"session_{number}", number + 1, number + 1, 1)
        assert len(heads.owners) <= MAX_OWNERS
        assert heads.newest == MAX_OWNERS + 10


async def test_a_fns_own_savepoint_rolled_back_leaves_no_gap(tmp_path: Path) -> None:
    """Through the writer: A's event in a fn's own savepoint rolled back, then B's, then A's:
    A's sequence and the positions run on without a hole (the heads are forgotten)."""
    async with storage.open_storage(tmp_path / "m.db", clock=FakeClock()) as store:
        await store.write(lambda conn: [_append(conn, "session_a"), _append(conn, "session_b")])

        def fn(conn: sqlite3.Connection) -> list[storage.EventRecord]:
            conn.execute("SAVEPOINT own")
            _append(conn, "session_a")
            conn.execute("ROLLBACK TO own")
            conn.execute("RELEASE own")
            return [_append(conn, "session_b"), _append(conn, "session_a")]

        made = await store.write(fn)
        journal = await store.read(_journal)
    assert [(e.owner_id, e.owner_sequence, e.position) for e in made] == [
        ("session_b", 2, 3),
        ("session_a", 2, 4),
    ]
    assert journal == [
        (1, "1", "session_a", 1),
        (2, "2", "session_b", 1),
        (3, "3", "session_b", 2),
        (4, "4", "session_a", 2),
    ]


async def test_a_failed_request_then_the_next_batch(tmp_path: Path) -> None:
    """A request that appends and raises (its transaction rolled back) leaves the next
    batch's events at the positions and sequences after the committed ones."""
    async with storage.open_storage(tmp_path / "m.db", clock=FakeClock()) as store:
        await store.write(lambda conn: [_append(conn, "session_a") for _ in range(2)])

        def fails(conn: sqlite3.Connection) -> None:
            _append(conn, "session_a")
            _append(conn, "session_b")
            raise RuntimeError("rolled back")

        with pytest.raises(RuntimeError):
            await store.write(fails)
        made = await store.write(lambda conn: [_append(conn, "session_a")])
        journal = await store.read(_journal)
    assert (made[0].position, made[0].owner_sequence) == (3, 3)
    assert journal[-1] == (3, "3", "session_a", 3)


async def test_a_replayed_batch_of_known_owners_stays_exact(tmp_path: Path) -> None:
    """Replayable requests of owners the heads know, one failing after the others appended
    (its shared savepoint rolled back, the others run again): positions run on 1..n and
    each owner's sequences too, as the answers say."""
    runs = _Runs()
    async with storage.open_storage(tmp_path / "m.db", clock=FakeClock()) as store:
        await store.write(lambda conn: [_append(conn, owner) for owner in OWNERS])
        results = await _one_batch(store, [
            ("a", _owned("session_a", "a", runs), True),
            ("b", _owned("session_b", "b", runs), True),
            ("bad", _owned("session_a", "bad", runs, fail=True), True),
            ("a2", _owned("session_a", "a2", runs), True),
        ], in_order=True)  # fmt: skip
        later = await store.write(lambda conn: _append(conn, "session_b"))
        journal = await store.read(_journal)
    assert (results["a"], results["b"], results["a2"]) == (2, 2, 3)
    assert isinstance(results["bad"], ValueError)
    assert (later.owner_sequence, later.position) == (3, 7)
    assert [row[0] for row in journal] == list(range(1, 8))
    assert all(str(position) == carried for position, carried, _, _ in journal)
    for owner in OWNERS:
        sequences = [row[3] for row in journal if row[2] == owner]
        assert sequences == list(range(1, len(sequences) + 1))


async def test_two_requests_of_one_key_in_one_batch(tmp_path: Path) -> None:
    """Two mutations of one idempotency key in one batch (an owner the heads know): the
    second is a duplicate, the journal holds the first's event once, the next event follows."""
    key = storage.MutationKey("actor_a", "session.rename", "cmd-1")

    def mutation(conn: sqlite3.Connection) -> storage.MutationResult:
        def apply(c: sqlite3.Connection) -> storage.Applied:
            event = _append(c, "session_a")
            return storage.Applied({"seq": event.owner_sequence}, event_ids=(event.event_id,))

        return storage.run_mutation(conn, key=key, input_digest="sha256:" + "0" * 64,
                                    now_ms=5, apply=apply)  # fmt: skip

    async with storage.open_storage(tmp_path / "m.db", clock=FakeClock()) as store:
        await store.write(lambda conn: _append(conn, "session_a"))
        results = await _one_batch(store, [
            ("first", mutation, True),
            ("again", mutation, True),
        ], in_order=True)  # fmt: skip
        later = await store.write(lambda conn: _append(conn, "session_a"))
        journal = await store.read(_journal)
    first, again = results["first"], results["again"]
    assert isinstance(first, storage.MutationResult)
    assert isinstance(again, storage.MutationResult)
    assert (first.delivery, again.delivery) == ("new", "duplicate")
    assert first.result == again.result == {"seq": 2}
    assert (later.owner_sequence, later.position) == (3, 3)
    assert journal == [(n, str(n), "session_a", n) for n in (1, 2, 3)]


# A program for the differential test: appends, the writer's savepoints and a fn's own, a
# transaction rolled back or committed, an append the heads do not see, a prune.
_STEPS = st.lists(
    st.one_of(
        st.tuples(st.just("append"), st.sampled_from(OWNERS)),
        st.tuples(st.just("unseen"), st.sampled_from(OWNERS)),
        st.tuples(st.sampled_from(["savepoint", "rollback_to", "release", "commit", "abort"])),
        st.tuples(st.just("prune"), st.integers(0, 3)),
    ),
    max_size=40,
)


def _run(conn: sqlite3.Connection, heads: JournalHeads | None, steps: list[tuple[object, ...]]
         ) -> list[tuple[int, str, int]]:  # fmt: skip
    """Run `steps` on `conn` (with `heads`, or reading the heads each time); every append's
    (position, owner, sequence)."""
    made: list[tuple[int, str, int]] = []
    depth = 0
    conn.execute("BEGIN IMMEDIATE")
    for step in steps:
        use_heads(heads)
        kind = step[0]
        if kind in ("append", "unseen"):
            if kind == "unseen":
                use_heads(None)  # another writer's row: the heads never learn of it
            record = _append(conn, str(step[1]))
            made.append((record.position, record.owner_id, record.owner_sequence))
        elif kind == "savepoint":
            conn.execute(f"SAVEPOINT s{depth}")
            depth += 1
        elif kind in ("rollback_to", "release") and depth:
            depth -= 1
            if kind == "rollback_to":
                conn.execute(f"ROLLBACK TO s{depth}")
            conn.execute(f"RELEASE s{depth}")
        elif kind in ("commit", "abort"):
            conn.execute("COMMIT" if kind == "commit" else "ROLLBACK")
            conn.execute("BEGIN IMMEDIATE")
            depth = 0
        elif kind == "prune":
            newest = conn.execute("SELECT max(position) FROM events").fetchone()[0] or 0
            assert isinstance(step[1], int)
            storage.prune_events(conn, before_position=newest + 1 - step[1])
    use_heads(None)
    conn.execute("COMMIT")
    return made


@settings(max_examples=60, deadline=None)
@given(steps=_STEPS)
def test_appends_match_reading_the_heads_each_time(steps: list[tuple[object, ...]]) -> None:
    """Any program of appends, savepoints rolled back or released, transactions rolled back
    or committed, appends behind the heads' back and prunes gives the same journal (positions,
    the positions IDs carry, owner sequences) with heads as reading the heads every time."""
    with (
        tempfile.TemporaryDirectory() as folder,
        _database(Path(folder), "kept.db") as kept,
        _database(Path(folder), "read.db") as read,
    ):
        with_heads = _run(kept, JournalHeads(kept), steps)
        without = _run(read, None, steps)
        assert with_heads == without
        assert _journal(kept) == _journal(read)
        for position, carried, _, _ in _journal(kept):
            assert str(position) == carried
