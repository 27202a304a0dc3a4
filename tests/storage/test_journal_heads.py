"""The writer's journal heads (storage/_heads.py): an append without a read, and still exact."""

from __future__ import annotations

import shutil
import sqlite3
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import trio
from hypothesis import given, settings
from hypothesis import strategies as st

import storage
from maia.core import FakeClock
from storage._batch import FailureCounts, Request, run_transaction
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
def _database(folder: Path, name: str, template: Path | None = None
              ) -> Iterator[sqlite3.Connection]:  # fmt: skip
    """A migrated database file (a copy of `template`'s, when given: migrating is slow)."""
    if template is not None:
        shutil.copyfile(template, folder / name)
    conn = sqlite3.connect(folder / name, isolation_level=None)
    try:
        migrate(conn, folder / name)
        yield conn
    finally:
        conn.close()


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("heads")
    with _database(folder, "template.db"):
        pass
    return folder / "template.db"


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


def test_a_new_journal_reads_first(tmp_path: Path) -> None:
    """The first event of the journal (no heads yet) reads the heads, as without them."""
    with _database(tmp_path, "m.db") as conn:
        use_heads(JournalHeads(conn))
        try:
            conn.execute("BEGIN IMMEDIATE")
            traced = _statements(conn, lambda: _append(conn, "session_a"))
            conn.execute("COMMIT")
        finally:
            use_heads(None)
        assert traced[0].startswith("SELECT")


def test_a_new_owner_is_numbered_and_appended_without_a_read(tmp_path: Path) -> None:
    """An owner the journal has never seen, once the heads are known: its number, then its
    event (sequence 1, the next position), and no read of its head."""
    with _database(tmp_path, "m.db") as conn:
        heads = JournalHeads(conn)
        use_heads(heads)
        try:
            conn.execute("BEGIN IMMEDIATE")
            first = _append(conn, "session_a")
            assert heads.all_pruned_numbered()  # read once per writer, here before the trace
            traced = _statements(conn, lambda: _append(conn, "session_b"))
            conn.execute("COMMIT")
        finally:
            use_heads(None)
        assert [t.split(" (")[0] for t in traced] == [
            "INSERT OR IGNORE INTO event_owners",
            "INSERT INTO events",
        ]
        assert _journal(conn)[-1] == (first.position + 1, str(first.position + 1), "session_b", 1)
        owners = conn.execute("SELECT owner_id FROM event_owners ORDER BY owner_no").fetchall()
        assert owners == [("session_a",), ("session_b",)]


def test_an_owner_known_to_the_journal_but_not_kept_reads_its_head(tmp_path: Path) -> None:
    """An owner with a number but not in the heads (the writer restarted): its numbering is
    ignored and its head read, so its sequence runs on."""
    with _database(tmp_path, "m.db") as conn:
        conn.execute("BEGIN IMMEDIATE")
        _append(conn, "session_a")
        _append(conn, "session_a")
        conn.execute("COMMIT")
        heads = JournalHeads(conn)
        use_heads(heads)
        try:
            conn.execute("BEGIN IMMEDIATE")
            _append(conn, "session_b")  # the heads are known from here
            assert heads.all_pruned_numbered()
            traced = _statements(conn, lambda: _append(conn, "session_a"))
            conn.execute("COMMIT")
        finally:
            use_heads(None)
        assert [t.split()[0] for t in traced] == ["INSERT", "SELECT", "INSERT"]
        assert _journal(conn)[-1] == (4, "4", "session_a", 3)


def test_a_pruned_head_without_a_number_turns_the_new_owner_path_off(tmp_path: Path) -> None:
    """A head pruned before owners were numbered (in `pruned_owner_heads`, not in
    `event_owners`): that owner's next event continues its sequence, read as before."""
    with _database(tmp_path, "m.db") as conn:
        conn.execute("INSERT INTO pruned_owner_heads (owner_id, last_seq) VALUES ('session_p', 7)")
        heads = JournalHeads(conn)
        use_heads(heads)
        try:
            conn.execute("BEGIN IMMEDIATE")
            _append(conn, "session_a")
            traced = _statements(conn, lambda: _append(conn, "session_p"))
            conn.execute("COMMIT")
        finally:
            use_heads(None)
        assert not heads.all_pruned_numbered()
        assert traced[0].startswith("SELECT")
        assert _journal(conn)[-1] == (2, "2", "session_p", 8)


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


async def test_an_owner_read_after_a_rollback_forgets_the_others(tmp_path: Path) -> None:
    """A's event in a fn's own savepoint rolled back, then an owner the heads do not know
    (read first), then A: the read sees the newest position moved back and forgets A's
    head, so A's sequence has no hole."""
    async with storage.open_storage(tmp_path / "m.db", clock=FakeClock()) as store:
        await store.write(lambda conn: _append(conn, "session_a"))

        def fn(conn: sqlite3.Connection) -> list[storage.EventRecord]:
            conn.execute("SAVEPOINT own")
            _append(conn, "session_a")
            conn.execute("ROLLBACK TO own")
            conn.execute("RELEASE own")
            return [_append(conn, "session_c"), _append(conn, "session_a")]

        made = await store.write(fn)
        journal = await store.read(_journal)
    assert [(e.owner_id, e.owner_sequence, e.position) for e in made] == [
        ("session_c", 1, 2),
        ("session_a", 2, 3),
    ]
    assert journal == [(1, "1", "session_a", 1), (2, "2", "session_c", 1),
                       (3, "3", "session_a", 2)]  # fmt: skip


def _other_writer(path: Path, owner: str) -> None:
    """One event appended by another connection to the same file (another writer)."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("BEGIN IMMEDIATE")
        _append(conn, owner)
        conn.execute("COMMIT")
    finally:
        conn.close()


async def test_heads_are_settled_at_each_commit(tmp_path: Path) -> None:
    """A committed write whose last event a fn's own savepoint rolled back, then another
    writer's event (the newest position back where the heads had it), then A: the heads
    were settled at the commit, so A's sequence has no hole."""
    path = tmp_path / "m.db"
    async with storage.open_storage(path, clock=FakeClock()) as store:

        def fn(conn: sqlite3.Connection) -> None:
            _append(conn, "session_a")
            conn.execute("SAVEPOINT own")
            _append(conn, "session_a")
            conn.execute("ROLLBACK TO own")
            conn.execute("RELEASE own")

        await store.write(fn)
        await trio.to_thread.run_sync(_other_writer, path, "session_b")
        later = await store.write(lambda conn: _append(conn, "session_a"))
        journal = await store.read(_journal)
    assert (later.owner_sequence, later.position) == (2, 3)
    assert [row[3] for row in journal if row[2] == "session_a"] == [1, 2]


async def test_heads_are_forgotten_when_a_request_fails(tmp_path: Path) -> None:
    """A request that appends A's event and raises (nothing of the batch appended), then
    another writer's event, then A: A's sequence has no hole."""
    path = tmp_path / "m.db"
    async with storage.open_storage(path, clock=FakeClock()) as store:
        await store.write(lambda conn: _append(conn, "session_a"))

        def fails(conn: sqlite3.Connection) -> None:
            _append(conn, "session_a")
            raise RuntimeError("rolled back")

        with pytest.raises(RuntimeError):
            await store.write(fails)
        await trio.to_thread.run_sync(_other_writer, path, "session_b")
        later = await store.write(lambda conn: _append(conn, "session_a"))
        journal = await store.read(_journal)
    assert (later.owner_sequence, later.position) == (2, 3)
    assert [row[3] for row in journal if row[2] == "session_a"] == [1, 2]


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


# A program for the differential test, run through the writer's own transaction runner: in a
# request, appends, savepoints of its own rolled back or released, a prune; a request that
# raises (rolled back alone); requests batched into transactions; between transactions,
# another connection appending (another writer).
# Appends and a request's own savepoints drawn most often: they make the stale heads.
_APPEND = st.tuples(st.just("append"), st.sampled_from(OWNERS))
# An owner no step named before (the journal's new owner: numbered without a read).
_APPEND_NEW = st.tuples(st.just("append_new"))
_OWN_SAVEPOINT = st.tuples(st.sampled_from(["savepoint", "rollback_to", "rollback_to"]))
_STEPS = st.lists(
    st.one_of(
        _APPEND,
        _APPEND,
        _APPEND,
        _APPEND_NEW,
        _OWN_SAVEPOINT,
        _OWN_SAVEPOINT,
        st.tuples(st.sampled_from(["release", "end", "raise", "end_replayable", "commit"])),
        st.tuples(st.just("other_writer"), st.sampled_from(OWNERS)),
        st.tuples(st.just("prune"), st.integers(0, 3)),
    ),
    max_size=30,
)


def _request(steps: list[tuple[object, ...]], fails: bool) -> Callable[[sqlite3.Connection], None]:
    """A write fn running `steps` (appends, its own savepoints, prunes); raising at the end
    when it `fails`."""

    def fn(conn: sqlite3.Connection) -> None:
        depth = 0
        for step in steps:
            if step[0] == "append":
                _append(conn, str(step[1]))
            elif step[0] == "savepoint":
                conn.execute(f"SAVEPOINT own{depth}")
                depth += 1
            elif step[0] in ("rollback_to", "release") and depth:
                depth -= 1
                if step[0] == "rollback_to":
                    conn.execute(f"ROLLBACK TO own{depth}")
                conn.execute(f"RELEASE own{depth}")
            elif step[0] == "prune":
                newest = conn.execute("SELECT max(position) FROM events").fetchone()[0] or 0
                assert isinstance(step[1], int)
                storage.prune_events(conn, before_position=newest + 1 - step[1])
        while depth:
            depth -= 1
            conn.execute(f"RELEASE own{depth}")
        if fails:
            raise ValueError("this request fails")

    return fn


def _run(conn: sqlite3.Connection, other: sqlite3.Connection, heads: JournalHeads | None,
         steps: list[tuple[object, ...]]) -> list[tuple[int, str, int]]:  # fmt: skip
    """Run `steps` with `run_transaction` (with `heads`, or reading the heads each time);
    the events each commit hands its listeners, as (position, owner, sequence)."""
    # Each new owner named by its step's index: the same names in both runs.
    steps = [("append", f"session_new{i}") if step[0] == "append_new" else step
             for i, step in enumerate(steps)]  # fmt: skip
    committed: list[storage.EventRecord] = []
    batch: list[Request] = []
    pending: list[tuple[object, ...]] = []
    task: Any = None  # the requests are answered in place: no trio task to wake

    def commit() -> None:
        if batch:
            run_transaction(conn, batch, committed, FailureCounts(), heads)
            batch.clear()

    for step in [*steps, ("commit",)]:
        kind = step[0]
        if kind in ("end", "raise", "end_replayable"):
            fn = _request(pending, fails=kind == "raise")
            batch.append(Request(fn, task, replayable=kind == "end_replayable"))
            pending = []
        elif kind == "commit":
            if pending:
                batch.append(Request(_request(pending, fails=False), task))
                pending = []
            commit()
        elif kind == "other_writer":
            commit()
            _append(other, str(step[1]))  # its own connection: no heads, its own transaction
        else:
            pending.append(step)
    return [(e.position, e.owner_id, e.owner_sequence) for e in committed]


@settings(max_examples=100, deadline=None)
@given(steps=_STEPS)
def test_appends_match_reading_the_heads_each_time(
    template: Path, steps: list[tuple[object, ...]]
) -> None:
    """Any program of appends, a request's own savepoints rolled back or released, requests
    that fail, replayable ones, batches, another writer's appends between transactions and
    prunes gives the same journal (positions, the positions IDs carry, owner sequences) and
    the same committed events with heads as reading the heads every time."""
    with (
        tempfile.TemporaryDirectory() as folder,
        _database(Path(folder), "kept.db", template) as kept,
        _database(Path(folder), "read.db", template) as read,
    ):
        other_kept = sqlite3.connect(Path(folder) / "kept.db", isolation_level=None)
        other_read = sqlite3.connect(Path(folder) / "read.db", isolation_level=None)
        try:
            with_heads = _run(kept, other_kept, JournalHeads(kept), steps)
            without = _run(read, other_read, None, steps)
        finally:
            other_kept.close()
            other_read.close()
        assert with_heads == without
        assert _journal(kept) == _journal(read)
        for position, carried, _, _ in _journal(kept):
            assert str(position) == carried
