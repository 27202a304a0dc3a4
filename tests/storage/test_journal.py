"""The event journal and cursors: gap-free owner sequences, pruning, signed cursors."""

from __future__ import annotations

import os
import sqlite3
import stat
from pathlib import Path

import pytest

import storage
from maia.core import FakeClock, MaiaError, digest_json


def _append(owner: str, n: int = 1) -> storage.WriteFn[list[storage.EventRecord]]:
    def fn(conn: sqlite3.Connection) -> list[storage.EventRecord]:
        return [
            storage.append_event(
                conn, owner_id=owner, event_type="test.happened", payload={"i": i}, now_ms=5
            )
            for i in range(n)
        ]

    return fn


async def test_owner_sequences_are_gap_free_even_when_a_request_fails(tmp_path: Path) -> None:
    """A rolled-back request leaves no hole: owner sequences stay 1..n, positions increase."""
    async with storage.open_storage(tmp_path / "m.db", clock=FakeClock()) as store:
        first = await store.write(_append("session_a", 3))

        def fails(conn: sqlite3.Connection) -> None:
            _append("session_a", 2)(conn)
            raise RuntimeError("rolled back")

        with pytest.raises(RuntimeError):
            await store.write(fails)
        later = await store.write(_append("session_a", 2))
        other = await store.write(_append("session_b", 1))
        assert [e.owner_sequence for e in first + later] == [1, 2, 3, 4, 5]
        assert other[0].owner_sequence == 1
        positions = [e.position for e in first + later + other]
        assert positions == sorted(positions)
        assert all(e.event_id.startswith("event_") for e in first)
        page = await store.read(lambda c: storage.read_events(c, owner_id="session_a"))
        assert [e.payload for e in page.events] == [
            {"i": 0},
            {"i": 1},
            {"i": 2},
            {"i": 0},
            {"i": 1},
        ]
        assert page.last_position == later[-1].position


async def test_pruning_keeps_sequences_and_refuses_reads_behind_it(tmp_path: Path) -> None:
    """After pruning, sequences continue, the marker moves, and reads behind it must reset."""
    async with storage.open_storage(tmp_path / "m.db", clock=FakeClock()) as store:
        events = await store.write(_append("session_a", 4))
        horizon = events[2].position
        deleted = await store.write(lambda c: storage.prune_events(c, before_position=horizon))
        assert deleted == 2
        assert await store.read(storage.oldest_retained_position) == horizon
        with pytest.raises(MaiaError) as caught:
            await store.read(lambda c: storage.read_events(c, after_position=0))
        assert caught.value.code == "cursor_reset_required"
        page = await store.read(lambda c: storage.read_events(c, after_position=horizon - 1))
        assert [e.owner_sequence for e in page.events] == [3, 4]
        # Prune everything: the next event still continues the owner's sequence.
        await store.write(
            lambda c: storage.prune_events(c, before_position=events[-1].position + 1)
        )
        more = await store.write(_append("session_a", 1))
        assert more[0].owner_sequence == 5
        with pytest.raises(MaiaError) as owner_reset:
            await store.read(lambda c: storage.read_owner_events(c, "session_a", after_sequence=1))
        assert owner_reset.value.code == "cursor_reset_required"
        tail = await store.read(
            lambda c: storage.read_owner_events(c, "session_a", after_sequence=4)
        )
        assert [e.owner_sequence for e in tail] == [5]


async def test_cursor_round_trip_tamper_expiry_and_horizon(tmp_path: Path) -> None:
    """A signed cursor opens; tampered → invalid_cursor; expired or pruned → reset."""
    clock = FakeClock()
    async with storage.open_storage(tmp_path / "m.db", clock=clock) as store:
        signer = store.cursors
        digest = digest_json({"ownerId": "session_a"})
        cursor = signer.issue(position=10, filter_digest=digest, ttl_ms=1000)
        assert signer.open(cursor, filter_digest=digest) == 10
        tampered = cursor[:-3] + ("A" if cursor[-3] != "A" else "B") + cursor[-2:]
        for bad in (tampered, "c1.x.y", "garbage", cursor + "x"):
            with pytest.raises(MaiaError) as caught:
                signer.open(bad, filter_digest=digest)
            assert caught.value.code == "invalid_cursor"
        with pytest.raises(MaiaError) as other_filter:
            signer.open(cursor, filter_digest=digest_json({}))
        assert other_filter.value.code == "invalid_cursor"
        with pytest.raises(MaiaError) as behind:
            signer.open(cursor, filter_digest=digest, oldest_retained=20)
        assert behind.value.code == "cursor_reset_required"
        clock.step_wall(-10_000_000)  # wall time decides nothing
        assert signer.open(cursor, filter_digest=digest) == 10
        clock.advance(1000)
        with pytest.raises(MaiaError) as expired:
            signer.open(cursor, filter_digest=digest)
        assert expired.value.code == "cursor_reset_required"
        fresh = signer.issue(position=3, filter_digest=digest)
    async with storage.open_storage(tmp_path / "m.db", clock=clock) as store:
        with pytest.raises(MaiaError) as restarted:
            store.cursors.open(fresh, filter_digest=digest)
        assert restarted.value.code == "cursor_reset_required"


async def test_node_key_file_is_private(tmp_path: Path) -> None:
    """The node key is 0600 in a 0700 directory; a key others can read is refused."""
    async with storage.open_storage(tmp_path / "m.db", clock=FakeClock()):
        pass
    key = tmp_path / "secrets" / "node.key"
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    assert stat.S_IMODE(key.parent.stat().st_mode) == 0o700
    os.chmod(key, 0o644)
    with pytest.raises(MaiaError) as caught:
        async with storage.open_storage(tmp_path / "m.db", clock=FakeClock()):
            pass
    assert caught.value.code == "configuration_invalid"


@pytest.mark.parametrize("after", [0, 1, 3])
async def test_commit_listeners_skip_events_a_fns_own_savepoint_rolled_back(
    tmp_path: Path, after: int
) -> None:
    """Events a write fn took back with a savepoint of its own (as a batch of sends does for
    a send that failed) never reach the commit listeners, whether or not later events of
    the batch reuse their positions; the listeners get exactly the journal's rows."""
    seen: list[storage.EventRecord] = []
    async with storage.open_storage(tmp_path / "m.db", clock=FakeClock()) as store:
        store.add_commit_listener(seen.extend)

        def fn(conn: sqlite3.Connection) -> None:
            _append("session_a", 2)(conn)
            conn.execute("SAVEPOINT own")
            _append("session_a", 2)(conn)
            conn.execute("ROLLBACK TO own")
            conn.execute("RELEASE own")
            _append("session_b", after)(conn)

        await store.write(fn)
        await store.write(_append("session_a", 1))
        stored = await store.read(lambda c: storage.read_events(c, limit=100).events)
        assert len(stored) == 3 + after
        assert seen == list(stored)


async def test_read_limits_are_validated(tmp_path: Path) -> None:
    """A page limit outside 1..MAX_PAGE is refused as validation_failed."""
    async with storage.open_storage(tmp_path / "m.db", clock=FakeClock()) as store:
        with pytest.raises(MaiaError) as caught:
            await store.read(lambda c: storage.read_events(c, limit=0))
        assert caught.value.code == "validation_failed"


async def test_commit_listeners_see_only_committed_events_before_callers(tmp_path: Path) -> None:
    """A commit listener gets a batch's committed events (not rolled-back ones) in order."""
    seen: list[tuple[str, int]] = []
    async with storage.open_storage(tmp_path / "m.db", clock=FakeClock()) as store:
        remove = store.add_commit_listener(
            lambda events: seen.extend((e.owner_id, e.owner_sequence) for e in events)
        )
        await store.write(_append("session_a", 2))

        def fails(conn: sqlite3.Connection) -> None:
            _append("session_b", 1)(conn)
            raise RuntimeError("rolled back")

        with pytest.raises(RuntimeError):
            await store.write(fails)
        assert seen == [("session_a", 1), ("session_a", 2)]
        remove()
        await store.write(_append("session_a", 1))
        assert len(seen) == 2
