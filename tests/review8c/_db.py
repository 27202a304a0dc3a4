"""Read-only looks into a real Node's database (tests/_db_reads), and /proc checks for
processes left behind, shared by the review's crash tests."""

from __future__ import annotations

import os
import time
from pathlib import Path

from tests._db_reads import BOUND_S, query, wait_rows

__all__ = ["BOUND_S", "alive", "processes_with", "query", "wait_gone", "wait_rows"]


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
