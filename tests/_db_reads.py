"""Read-only looks into a real Node's database while it runs (a second connection, never
a writer), shared by the tests that kill and restart real Nodes."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from typing import Any

BOUND_S = 90.0  # every wait: generous, real processes on a loaded 2-core machine


def query(home: Path, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Rows of `sql` read through a read-only connection to `home/maia.db`."""
    conn = sqlite3.connect(f"file:{home / 'maia.db'}?mode=ro", uri=True, timeout=10)
    try:
        return conn.execute(sql, args).fetchall()
    finally:
        conn.close()


def wait_rows(
    home: Path,
    sql: str,
    args: tuple[Any, ...],
    done: Any,
    timeout_s: float = BOUND_S,
    poll_s: float = 0.05,
) -> list[tuple[Any, ...]]:
    """`query` every 50 ms until `done(rows)` holds (AssertionError with the rows past the
    bound)."""
    deadline = time.monotonic() + timeout_s
    while True:
        rows = query(home, sql, args)
        if done(rows):
            return rows
        assert time.monotonic() < deadline, rows
        time.sleep(poll_s)
