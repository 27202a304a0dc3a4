"""A small pool of read-only connections for reads beside the writer.

WAL lets readers see the last committed state while the writer works. Each read runs in one
short read transaction (a long one would starve checkpoints) on a connection of its own.

The pool keeps `size` dedicated reader threads, each owning one connection and fed by one
shared queue; a read is queued with its trio task and the answer handed back through the
trio token (`reschedule`), the way the writer answers. That costs less per read than a
`trio.to_thread` hand-off (a thread start-or-reuse, a context copy and a cancel scope per
call: measured in docs/storage.md). At most `size` reads are in flight (the limiter), so
the queue never holds more than `size` reads; each holds a token of trio's default thread
limiter as well, as a `to_thread` call would. A read in flight is not cancellable (as with
`to_thread`); `busy_timeout` bounds its wait for a lock.
"""

from __future__ import annotations

import contextlib
import queue
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final, TypeVar

import outcome
import trio

from maia.core import MaiaError

T = TypeVar("T")
# Each reader connection's SQLite page cache, in KiB (SQLite's default is 2,000): a reader's
# cache starts over whenever the writer committed since its last read (WAL), so a larger
# one holds memory more than it saves reads (docs/storage.md, docs/performance.md).
READER_CACHE_KIB: Final = 1024
# A queued read: (fn, deliver the outcome); None stops the thread that takes it.
_Job = tuple[Callable[[sqlite3.Connection], Any], Callable[[outcome.Outcome[Any]], None]]


class ReaderPool:
    """Read-only connections, at most `size` reads at a time, on `size` reader threads."""

    def __init__(self, path: Path, size: int) -> None:
        self._path = path
        self._size = size
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []
        self._limiter = trio.CapacityLimiter(size)
        self._open = False

    def open(self) -> None:
        self._open = True
        self._threads = [
            threading.Thread(target=self._serve, name=f"reader:{self._path.name}:{i}", daemon=True)
            for i in range(self._size)
        ]
        for thread in self._threads:
            thread.start()

    def is_open(self) -> bool:
        return self._open

    def close(self) -> None:
        """Stop the threads once the reads queued before this call are answered (each
        closes its connection); does not wait for them."""
        if not self._open:
            return
        self._open = False
        for _ in self._threads:
            self._jobs.put(None)  # FIFO: behind every read already queued
        self._threads = []

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(
            f"file:{self._path}?mode=ro", uri=True, isolation_level=None, check_same_thread=False
        )
        conn.execute("PRAGMA busy_timeout = 5000")
        conn.execute(f"PRAGMA cache_size = -{READER_CACHE_KIB}")
        return conn

    async def run(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run `fn` on a reader thread's connection; raises `unavailable` once closed."""
        # A token of trio's default thread limiter too, as `to_thread` took: the reads share
        # its bound with other thread work, and whoever asks it whether a thread is at work
        # (tests' virtual-time drivers) still sees a read in flight.
        async with self._limiter, trio.to_thread.current_default_thread_limiter():
            if not self._open:
                raise MaiaError(
                    "unavailable", "storage is unavailable: closed", {"target": "storage"}
                )
            task = trio.lowlevel.current_task()
            token = trio.lowlevel.current_trio_token()

            def deliver(answer: outcome.Outcome[Any]) -> None:  # in the reader thread
                with contextlib.suppress(trio.RunFinishedError):
                    token.run_sync_soon(trio.lowlevel.reschedule, task, answer)

            self._jobs.put((fn, deliver))

            def abort(_: Any) -> trio.lowlevel.Abort:
                return trio.lowlevel.Abort.FAILED  # the read is short and runs to its end

            result: T = await trio.lowlevel.wait_task_rescheduled(abort)
            return result

    def _serve(self) -> None:
        conn: sqlite3.Connection | None = None
        try:
            while (job := self._jobs.get()) is not None:
                fn, deliver = job
                try:
                    if conn is None:
                        conn = self._connect()
                    answer = _read(conn, fn)
                except BaseException as error:  # connect or BEGIN/COMMIT failed: a new one
                    answer = outcome.Error(error)
                    if conn is not None:
                        conn.close()
                        conn = None
                deliver(answer)
        finally:
            if conn is not None:
                conn.close()


def _read(conn: sqlite3.Connection, fn: Callable[[sqlite3.Connection], T]) -> outcome.Outcome[T]:
    conn.execute("BEGIN")
    try:
        return outcome.capture(fn, conn)
    finally:
        conn.execute("COMMIT")
