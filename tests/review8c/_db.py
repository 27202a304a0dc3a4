"""Read-only looks into a real Node's database (a second connection, never a writer), and
/proc checks for processes left behind, shared by the review's crash tests."""

from __future__ import annotations

import os
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
    home: Path, sql: str, args: tuple[Any, ...], done: Any, timeout_s: float = BOUND_S
) -> list[tuple[Any, ...]]:
    """`query` every 50 ms until `done(rows)` holds (AssertionError with the rows past the
    bound)."""
    deadline = time.monotonic() + timeout_s
    while True:
        rows = query(home, sql, args)
        if done(rows):
            return rows
        assert time.monotonic() < deadline, rows
        time.sleep(0.05)


def alive(pid: int) -> bool:
    """The process exists and is not a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def wait_gone(pid: int, timeout_s: float = BOUND_S) -> bool:
    """Whether `pid` is gone (or a zombie) within `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while alive(pid):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)
    return True


def processes_with(marker: str) -> list[int]:
    """Live pids whose command line or environment holds `marker` (this process excluded)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            blob = (entry / "environ").read_bytes() + (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if marker.encode() in blob and alive(int(entry.name)):
            found.append(int(entry.name))
    return found
