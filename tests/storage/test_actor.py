"""The storage actor: group commit, isolation of failures, bounds, shutdown, migrations."""

from __future__ import annotations

import functools
import hashlib
import sqlite3
import threading
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
import trio
import trio.testing

import storage
from maia.core import FakeClock, MaiaError
from storage._writer import Outside


def _insert_counter(name: str, value: int = 1) -> storage.WriteFn[str]:
    def fn(conn: sqlite3.Connection) -> str:
        conn.execute("INSERT INTO counters (name, value) VALUES (?, ?)", (name, value))
        return name

    return fn


class Gate:
    """Holds the writer until opened, so later requests queue: submitted as `Outside(gate)`,
    it runs in the writer thread, where the batch loop waits for it."""

    def __init__(self) -> None:
        self._entered = threading.Event()
        self._open = threading.Event()

    def __call__(self, conn: sqlite3.Connection) -> None:
        self._entered.set()
        self._open.wait(10)

    async def wait_entered(self) -> None:
        """Wait (at most 10 s) until the writer thread runs the gate."""
        assert await trio.to_thread.run_sync(self._entered.wait, 10)

    def set(self) -> None:
        self._open.set()


def _counters(path: Path) -> dict[str, int]:
    with sqlite3.connect(path) as conn:
        return dict(conn.execute("SELECT name, value FROM counters").fetchall())


async def test_write_commits_and_read_sees_it(tmp_path: Path) -> None:
    """A write's result comes back after commit and a read-only connection sees it."""
    async with storage.open_storage(tmp_path / "m.db", clock=FakeClock()) as store:
        assert await store.write(_insert_counter("a", 7)) == "a"
        value = await store.read(
            lambda c: c.execute("SELECT value FROM counters WHERE name='a'").fetchone()[0]
        )
        assert value == 7
    assert _counters(tmp_path / "m.db")["a"] == 7


async def test_writer_cpu_counts_the_writer_threads_work(tmp_path: Path) -> None:
    """writer_cpu_s counts the writer's work: it grows by at least the CPU a request's fn
    spends (run by the batch loop), and not by other work done on the trio thread."""

    def spin(conn: sqlite3.Connection) -> None:
        deadline = time.thread_time() + 0.05
        while time.thread_time() < deadline:
            pass

    async with storage.open_storage(tmp_path / "m.db", clock=FakeClock()) as store:
        before = store.writer_cpu_s()
        await store.write(spin)
        spent = store.writer_cpu_s() - before
        assert spent >= 0.05
        idle = store.writer_cpu_s()
        deadline = time.thread_time() + 0.05
        while time.thread_time() < deadline:  # the trio thread's own CPU, not the writer's
            pass
        assert store.writer_cpu_s() - idle < 0.05
    assert store.writer_cpu_s() == 0.0  # the thread ended


async def test_failing_request_in_a_batch_does_not_affect_the_others(tmp_path: Path) -> None:
    """In one group-commit batch, a request that raises is rolled back alone; others commit."""
    gate = Gate()
    async with storage.open_storage(tmp_path / "m.db", clock=FakeClock()) as store:
        results: dict[str, object] = {}

        def failing(conn: sqlite3.Connection) -> None:
            conn.execute("INSERT INTO counters (name, value) VALUES ('bad', 1)")
            raise ValueError("this request fails")

        async def call(name: str, fn: storage.WriteFn[object]) -> None:
            try:
                results[name] = await store.write(fn)
            except ValueError as error:
                results[name] = error

        with trio.fail_after(10):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(call, "blocker", Outside(gate))
                await gate.wait_entered()
                nursery.start_soon(call, "one", _insert_counter("one"))
                nursery.start_soon(call, "bad", failing)
                nursery.start_soon(call, "two", _insert_counter("two"))
                await trio.testing.wait_all_tasks_blocked()
                gate.set()
        assert results["one"] == "one"
        assert results["two"] == "two"
        assert isinstance(results["bad"], ValueError)
        stats = store.statistics()
        assert stats.max_batch_size == 3
        assert stats.failed_requests == 1
    counters = _counters(tmp_path / "m.db")
    assert "one" in counters
    assert "two" in counters
    assert "bad" not in counters


async def test_a_failing_first_request_is_rolled_back_alone_without_a_savepoint(
    tmp_path: Path,
) -> None:
    """The first request of a batch runs without a savepoint: when it raises, its row and
    event vanish (no commit listener sees the event), and the batch's later requests and
    the next batch commit; the failure is counted."""
    gate = Gate()
    seen: list[str] = []
    async with storage.open_storage(tmp_path / "m.db", clock=FakeClock()) as store:
        store.add_commit_listener(lambda events: seen.extend(e.event_type for e in events))
        results: dict[str, object] = {}

        def failing(conn: sqlite3.Connection) -> None:
            conn.execute("INSERT INTO counters (name, value) VALUES ('bad', 1)")
            storage.append_event(conn, owner_id="session_x", event_type="bad.happened",
                                 payload={}, now_ms=1)  # fmt: skip
            raise ValueError("the first request fails")

        def good(conn: sqlite3.Connection) -> str:
            storage.append_event(conn, owner_id="session_x", event_type="good.happened",
                                 payload={}, now_ms=1)  # fmt: skip
            return _insert_counter("one")(conn)

        async def call(name: str, fn: storage.WriteFn[object]) -> None:
            try:
                results[name] = await store.write(fn)
            except ValueError as error:
                results[name] = error

        with trio.fail_after(10):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(call, "blocker", Outside(gate))
                await gate.wait_entered()
                nursery.start_soon(call, "bad", failing)
                await trio.testing.wait_all_tasks_blocked()
                nursery.start_soon(call, "one", good)
                await trio.testing.wait_all_tasks_blocked()
                gate.set()
        assert isinstance(results["bad"], ValueError)
        assert results["one"] == "one"
        assert await store.write(_insert_counter("after")) == "after"
        with pytest.raises(ValueError, match="first request"):
            await store.write(failing)  # a batch of one: nothing else to keep
        stats = store.statistics()
        assert stats.failed_requests == 2
        assert stats.max_batch_size == 2  # the failing request led a batch of two
        events = await store.read(lambda c: storage.read_owner_events(c, "session_x"))
    assert [e.event_type for e in events] == ["good.happened"]
    assert [e.owner_sequence for e in events] == [1]
    assert seen == ["good.happened"]
    counters = _counters(tmp_path / "m.db")
    assert "one" in counters
    assert "after" in counters
    assert "bad" not in counters


async def test_failed_commit_acknowledges_no_request_of_the_batch(tmp_path: Path) -> None:
    """When COMMIT fails (a deferred foreign key), every request of the batch gets unavailable."""
    gate = Gate()
    async with storage.open_storage(tmp_path / "m.db", clock=FakeClock()) as store:
        errors: list[BaseException] = []

        def dangling(conn: sqlite3.Connection) -> None:
            conn.execute("PRAGMA defer_foreign_keys = ON")
            conn.execute(
                "INSERT INTO sessions (session_id, project_id, executor, state, created_ms,"
                " updated_ms) VALUES ('session_x', 'project_missing', 'echo', 'idle', 0, 0)"
            )

        async def call(fn: storage.WriteFn[object]) -> None:
            try:
                await store.write(fn)
            except MaiaError as error:
                errors.append(error)

        with trio.fail_after(10):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(call, Outside(gate))
                await gate.wait_entered()
                nursery.start_soon(call, _insert_counter("good"))
                nursery.start_soon(call, dangling)
                await trio.testing.wait_all_tasks_blocked()
                gate.set()
        assert len(errors) == 2
        assert {e.code for e in errors if isinstance(e, MaiaError)} == {"unavailable"}
        assert store.statistics().failed_commits == 1
        # The actor goes on: the next batch commits.
        assert await store.write(_insert_counter("after")) == "after"
    counters = _counters(tmp_path / "m.db")
    assert "good" not in counters
    assert "after" in counters


async def test_newer_database_is_refused_and_left_untouched(tmp_path: Path) -> None:
    """A database whose user_version is above ours is refused with a clear error, unchanged."""
    path = tmp_path / "m.db"
    async with storage.open_storage(path, clock=FakeClock()):
        pass
    with sqlite3.connect(path) as conn:
        conn.execute(f"PRAGMA user_version = {storage.SCHEMA_VERSION + 1}")
    conn.close()
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    with pytest.raises(MaiaError) as caught:
        async with storage.open_storage(path, clock=FakeClock()):
            pass
    assert caught.value.code == "storage_version_unsupported"
    assert str(storage.SCHEMA_VERSION + 1) in caught.value.message
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before


async def test_migrations_reach_the_schema_version_and_epochs_move(tmp_path: Path) -> None:
    """A new file is migrated to SCHEMA_VERSION; the node epoch grows on each open."""
    path = tmp_path / "m.db"
    epochs = []
    for _ in range(3):
        async with storage.open_storage(path, clock=FakeClock()) as store:
            epochs.append((store.node_id, store.node_epoch))
    assert [e for _, e in epochs] == [1, 2, 3]
    assert len({n for n, _ in epochs}) == 1
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == storage.SCHEMA_VERSION
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.close()


async def test_worker_epochs_strictly_increase_across_restarts(tmp_path: Path) -> None:
    """next_worker_epoch never repeats a committed value, even across reopen."""
    path = tmp_path / "m.db"
    seen: list[int] = []
    for _ in range(2):
        async with storage.open_storage(path, clock=FakeClock()) as store:
            for _ in range(3):
                seen.append(await store.write(storage.next_worker_epoch))
    assert seen == sorted(set(seen))
    assert seen[0] >= 1


async def test_full_mailbox_waits_then_refuses_overloaded(tmp_path: Path) -> None:
    """With the mailbox full past the admission bound, a write raises overloaded."""
    gate = Gate()
    async with storage.open_storage(
        tmp_path / "m.db", clock=FakeClock(), mailbox_size=1, admission_timeout_s=0.1
    ) as store:
        with trio.fail_after(10):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(store.write, Outside(gate))
                await gate.wait_entered()
                assert store.statistics().mailbox_depth == 1
                with pytest.raises(MaiaError) as caught:
                    await store.write(_insert_counter("late"))
                assert caught.value.code == "overloaded"
                assert caught.value.retryable
                gate.set()
    assert "late" not in _counters(tmp_path / "m.db")


async def test_stopped_actor_fails_pending_and_new_requests(tmp_path: Path) -> None:
    """A writer stuck past the close deadline fails its callers; later writes fail at once."""
    gate = Gate()
    codes: list[str] = []
    try:
        async with storage.open_storage(tmp_path / "m.db", clock=FakeClock()) as store:

            async def call(fn: storage.WriteFn[object]) -> None:
                try:
                    await store.write(fn)
                except MaiaError as error:
                    codes.append(error.code)

            with trio.fail_after(10):
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(call, Outside(gate))
                    await gate.wait_entered()
                    nursery.start_soon(call, _insert_counter("queued"))
                    await trio.testing.wait_all_tasks_blocked()
                    await store.aclose(timeout_s=0.1)
            assert codes == ["unavailable", "unavailable"]
            with pytest.raises(MaiaError) as caught:
                await store.write(_insert_counter("after"))
            assert caught.value.code == "unavailable"
            with pytest.raises(MaiaError):
                await store.read(lambda c: 1)
            gate.set()
    finally:
        gate.set()


async def test_backup_is_a_consistent_copy(tmp_path: Path) -> None:
    """backup_to writes a complete, integrity-checked copy with every committed write."""
    async with storage.open_storage(tmp_path / "m.db", clock=FakeClock()) as store:
        await store.write(_insert_counter("kept"))
        await store.backup_to(tmp_path / "copy.db")
    with sqlite3.connect(tmp_path / "copy.db") as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.close()
    assert _counters(tmp_path / "copy.db")["kept"] == 1


async def test_bad_settings_are_refused(tmp_path: Path) -> None:
    """An unknown synchronous mode is refused before anything is created."""
    with pytest.raises(ValueError, match="synchronous"):
        async with storage.open_storage(tmp_path / "m.db", clock=FakeClock(), synchronous="FAST"):
            pass
    assert not (tmp_path / "m.db").exists()


async def test_slow_requests_are_batched_within_the_bodies_budget(tmp_path: Path) -> None:
    """The batch loop runs the fns in the trio thread, so it sizes a batch from the recent
    time per request: 40 requests of 5 ms each, queued together, go in batches of at most
    MIN_BATCH_ROOM (the budget allows fewer, the floor keeps 16), not all in one that holds
    the thread for 200 ms."""
    from storage._writer import BATCH_BODIES_BUDGET_S, MIN_BATCH_ROOM

    def slow(name: str) -> storage.WriteFn[str]:
        insert = _insert_counter(name)

        def fn(conn: sqlite3.Connection) -> str:
            time.sleep(0.005)  # the fn's own time, which the loop measures
            return insert(conn)

        return fn

    room = max(MIN_BATCH_ROOM, int(BATCH_BODIES_BUDGET_S / 0.005))
    assert room < 40
    gate = Gate()
    async with storage.open_storage(tmp_path / "m.db", clock=FakeClock()) as store:
        assert await store.write(slow("first")) == "first"
        with trio.fail_after(10):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(store.write, Outside(gate))
                await gate.wait_entered()
                for index in range(40):
                    nursery.start_soon(store.write, slow(f"n{index}"))
                await trio.testing.wait_all_tasks_blocked()
                before = store.statistics().batches
                gate.set()
        stats = store.statistics()
    assert stats.batches - before >= 1 + -(-40 // room)  # the gate's batch, then the slow ones
    assert stats.max_batch_size <= room
    assert {"first", *(f"n{i}" for i in range(40))} <= set(_counters(tmp_path / "m.db"))


async def test_a_lock_held_by_another_process_leaves_the_trio_thread_free(
    tmp_path: Path,
) -> None:
    """While another connection holds the write lock, a write's BEGIN waits in the writer
    thread, not in the trio thread: other tasks run meanwhile, and the write commits once
    the lock is released (here by this very thread, which a blocked loop could not do)."""
    path = tmp_path / "m.db"
    async with storage.open_storage(path, clock=FakeClock()) as store:
        other = sqlite3.connect(path, isolation_level=None)
        try:
            other.execute("BEGIN IMMEDIATE")
            done: list[str] = []

            async def write() -> None:
                done.append(await store.write(_insert_counter("waited")))

            with trio.fail_after(10):
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(write)
                    await trio.sleep(0.3)  # returns only if the loop is not stuck in BEGIN
                    assert done == []
                    other.execute("COMMIT")
        finally:
            other.close()
        assert done == ["waited"]
    assert _counters(path)["waited"] == 1


async def test_a_backup_queued_behind_a_stuck_writer_does_not_run_after_close(
    tmp_path: Path,
) -> None:
    """A close that times out answers a queued backup `unavailable`; when the writer comes
    free, the backup is not taken after all."""
    gate = Gate()
    target = tmp_path / "copy.db"
    codes: list[str] = []
    try:
        async with storage.open_storage(tmp_path / "m.db", clock=FakeClock()) as store:

            async def answered(job: Callable[[], Awaitable[object]]) -> None:
                try:
                    await job()
                except MaiaError as error:
                    codes.append(error.code)

            with trio.fail_after(10):
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(answered, functools.partial(store.write, Outside(gate)))
                    await gate.wait_entered()
                    nursery.start_soon(answered, functools.partial(store.backup_to, target))
                    await trio.testing.wait_all_tasks_blocked()
                    await store.aclose(timeout_s=0.1)
            gate.set()
            with trio.fail_after(10):
                await store._join(10)  # the thread ends once the gate's job returned
    finally:
        gate.set()
    assert codes == ["unavailable", "unavailable"]  # the gate's caller and the backup's
    assert not target.exists()


async def test_a_listener_raising_a_base_exception_still_answers_the_batch(
    tmp_path: Path,
) -> None:
    """A commit listener that raises what is not an Exception stops the writer loudly, but
    the batch it was told of is answered first (its write committed); later writes are
    refused `unavailable`, none hangs."""

    class Broken(BaseException):
        pass

    def listener(events: object) -> None:
        raise Broken

    def with_event(conn: sqlite3.Connection) -> str:
        storage.append_event(conn, owner_id="session_x", event_type="x.happened",
                             payload={}, now_ms=1)  # fmt: skip
        return _insert_counter("told")(conn)

    async with storage.open_storage(tmp_path / "m.db", clock=FakeClock()) as store:
        store.add_commit_listener(listener)
        with trio.fail_after(10):
            assert await store.write(with_event) == "told"
            with pytest.raises(MaiaError) as refused:
                await store.write(_insert_counter("after"))
    assert refused.value.code == "unavailable"
    counters = _counters(tmp_path / "m.db")
    assert "told" in counters
    assert "after" not in counters
