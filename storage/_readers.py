"""A small pool of read-only connections for reads beside the writer.

WAL lets readers see the last committed state while the writer works. Each read runs in one
short read transaction (a long one would starve checkpoints) on a connection checked out for
that read alone, in one of trio's worker threads.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import outcome
import trio

from maia.core import MaiaError

T = TypeVar("T")


class ReaderPool:
    """Read-only connections, at most `size` reads at a time."""

    def __init__(self, path: Path, size: int) -> None:
        self._path = path
        self._size = size
        self._idle: list[sqlite3.Connection] = []
        self._limiter = trio.CapacityLimiter(size)
        self._open = False

    def open(self) -> None:
        self._open = True

    def is_open(self) -> bool:
        return self._open

    def close(self) -> None:
        self._open = False
        while self._idle:
            self._idle.pop().close()

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(
            f"file:{self._path}?mode=ro", uri=True, isolation_level=None, check_same_thread=False
        )
        conn.execute("PRAGMA busy_timeout = 5000")
        return conn

    async def run(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run `fn` on an idle connection; raises `unavailable` once closed."""
        async with self._limiter:
            if not self._open:
                raise MaiaError(
                    "unavailable", "storage is unavailable: closed", {"target": "storage"}
                )
            idle = self._idle.pop() if self._idle else None
            answer, conn = await trio.to_thread.run_sync(_read, idle, fn, self._connect)
            if self.is_open():  # the pool may have closed during the read
                self._idle.append(conn)
            else:
                conn.close()
            return answer.unwrap()


def _read(
    conn: sqlite3.Connection | None,
    fn: Callable[[sqlite3.Connection], T],
    connect: Callable[[], sqlite3.Connection],
) -> tuple[outcome.Outcome[T], sqlite3.Connection]:
    if conn is None:
        conn = connect()
    conn.execute("BEGIN")
    try:
        return outcome.capture(fn, conn), conn
    finally:
        conn.execute("COMMIT")
