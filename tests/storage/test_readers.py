"""The reader pool's dedicated threads: answers, errors, bounds, close."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest
import trio

from maia.core import MaiaError
from storage._readers import ReaderPool


def _db(path: Path) -> Path:
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("CREATE TABLE t (v INTEGER)")
    conn.execute("INSERT INTO t VALUES (7)")
    conn.commit()
    conn.close()
    return path


async def test_reads_answer_and_errors_leave_the_thread_serving(tmp_path: Path) -> None:
    """A read's value and a read's exception both reach the caller; the pool keeps serving."""
    pool = ReaderPool(_db(tmp_path / "r.db"), 2)
    pool.open()
    try:
        assert await pool.run(lambda c: c.execute("SELECT v FROM t").fetchone()[0]) == 7
        with pytest.raises(sqlite3.OperationalError):
            await pool.run(lambda c: c.execute("SELECT nope FROM t").fetchone())
        with pytest.raises(sqlite3.OperationalError):  # read-only connection
            await pool.run(lambda c: c.execute("INSERT INTO t VALUES (1)"))
        assert await pool.run(lambda c: c.execute("SELECT count(*) FROM t").fetchone()[0]) == 1
    finally:
        pool.close()


async def test_at_most_size_reads_run_at_once(tmp_path: Path) -> None:
    """Twelve concurrent reads on a pool of 3 never run more than 3 at a time, all answered."""
    pool = ReaderPool(_db(tmp_path / "r.db"), 3)
    pool.open()
    lock = threading.Lock()
    running, peak, answers = [0], [0], []

    def read(conn: sqlite3.Connection) -> int:
        with lock:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
        threading.Event().wait(0.01)
        with lock:
            running[0] -= 1
        return int(conn.execute("SELECT v FROM t").fetchone()[0])

    async def one() -> None:
        answers.append(await pool.run(read))

    try:
        with trio.fail_after(30):
            async with trio.open_nursery() as nursery:
                for _ in range(12):
                    nursery.start_soon(one)
    finally:
        pool.close()
    assert answers == [7] * 12
    assert 1 <= peak[0] <= 3


async def test_a_cancelled_caller_still_gets_its_read_finished(tmp_path: Path) -> None:
    """Cancelling a caller mid-read waits for the read to end (not abandoned), then cancels."""
    pool = ReaderPool(_db(tmp_path / "r.db"), 1)
    pool.open()
    done = threading.Event()

    def slow(conn: sqlite3.Connection) -> None:
        threading.Event().wait(0.2)
        done.set()

    try:
        with trio.move_on_after(0.01):
            await pool.run(slow)
        assert done.is_set()  # the caller returned only once the read had finished
        assert await pool.run(lambda c: c.execute("SELECT v FROM t").fetchone()[0]) == 7
    finally:
        pool.close()


async def test_closed_pool_refuses_and_stops_its_threads(tmp_path: Path) -> None:
    """After close a read raises `unavailable`, and the reader threads end."""
    pool = ReaderPool(_db(tmp_path / "r.db"), 2)
    pool.open()
    await pool.run(lambda c: c.execute("SELECT 1").fetchone())
    threads = list(pool._threads)
    pool.close()
    with pytest.raises(MaiaError) as caught:
        await pool.run(lambda c: c.execute("SELECT 1").fetchone())
    assert caught.value.code == "unavailable"
    for thread in threads:
        thread.join(timeout=10)
        assert not thread.is_alive()
