"""The process side of a worker: spawn in a new session, signal the group, sweep the tree.

A worker runs in its own session and process group, so one `killpg` reaches it and its
ordinary children. A descendant that calls `setsid` escapes that; the Node therefore makes
itself a child subreaper (orphans are reparented to it, not to init) and, after the group
kill, sweeps every descendant that carries the attempt's marker variable or was in the
worker's tree when the stop began. A Node killed outright leaves no subreaper: what its
workers spawned with `setsid` is reparented to init, and only its environment still names
it; `sweep_strays` finds those by the scope and attempt markers when the next supervisor of
the same scope opens, and again when it closes. Stderr is kept in a bounded ring for crash
reports.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import time
from collections import deque

import psutil

PR_SET_CHILD_SUBREAPER = 36
PR_GET_CHILD_SUBREAPER = 37
STDERR_RING_BYTES = 64 * 1024
ATTEMPT_MARKER = "MAIA_WORKER_ATTEMPT"  # every worker's attempt ID, inherited by its tree
SCOPE_MARKER = "MAIA_WORKER_SCOPE"  # whose workers: one Node home (see `sweep_strays`)

_holders = 0  # open supervisors that need this process to be a subreaper


def _prctl_subreaper(on: bool) -> bool:
    if not sys.platform.startswith("linux"):
        return False
    libc = ctypes.CDLL(None, use_errno=True)
    return bool(libc.prctl(PR_SET_CHILD_SUBREAPER, 1 if on else 0, 0, 0, 0) == 0)


def become_subreaper() -> bool:
    """Make this process a child subreaper (Linux) until the matching `release_subreaper`.
    Returns whether it is one. Counted: nested holders keep it on until the last leaves."""
    global _holders
    if not _prctl_subreaper(True):
        return False
    _holders += 1
    return True


def is_subreaper() -> bool:
    """Whether this process is a child subreaper now (Linux; False elsewhere)."""
    if not sys.platform.startswith("linux"):
        return False
    libc = ctypes.CDLL(None, use_errno=True)
    flag = ctypes.c_int(0)
    libc.prctl(PR_GET_CHILD_SUBREAPER, ctypes.byref(flag), 0, 0, 0)
    return flag.value != 0


def release_subreaper() -> None:
    """Undo one `become_subreaper`; the last holder turns it off, so a process that no longer
    supervises workers (a test run, a CLI) does not keep adopting unrelated orphans."""
    global _holders
    if _holders == 0:
        return
    _holders -= 1
    if _holders == 0:
        _prctl_subreaper(False)


def signal_group(pgid: int, signum: int) -> bool:
    """Send `signum` to process group `pgid`; False when the group no longer exists."""
    try:
        os.killpg(pgid, signum)
    except ProcessLookupError:
        return False
    except PermissionError:
        return False
    return True


def descendants(pid: int) -> list[psutil.Process]:
    """The live descendants of `pid` (empty when it is gone)."""
    try:
        return list(psutil.Process(pid).children(recursive=True))
    except psutil.Error:
        return []


def _carries_marker(process: psutil.Process, marker: str, attempt_id: str) -> bool:
    try:
        return bool(process.environ().get(marker) == attempt_id)
    except psutil.Error:
        return False


def sweep(known: list[psutil.Process], marker: str, attempt_id: str, wait_s: float) -> list[int]:
    """SIGKILL every process in `known` still alive, and every descendant of ours carrying
    `marker=attempt_id`; reap what is ours. Returns the pids killed. Blocking: run it in a
    thread."""
    mine = [p for p in descendants(os.getpid()) if _carries_marker(p, marker, attempt_id)]
    victims: dict[int, psutil.Process] = {}
    for process in [*known, *mine]:
        try:
            if process.is_running() and process.status() != psutil.STATUS_ZOMBIE:
                victims[process.pid] = process
            elif process.is_running():
                victims.setdefault(process.pid, process)  # a zombie of ours: reap it
        except psutil.Error:
            continue
    for process in victims.values():
        try:
            process.send_signal(signal.SIGKILL)
        except psutil.Error:
            continue
    psutil.wait_procs(list(victims.values()), timeout=wait_s)
    return sorted(victims)


def _stray_of(process: psutil.Process, scope: str, live: frozenset[str], since: float) -> bool:
    """Whether `process` carries this scope's marker for an attempt that is not live, and
    was started before `since` (a process newer than the sweep is no leftover)."""
    try:
        env = process.environ()
        attempt = env.get(ATTEMPT_MARKER)
        return bool(
            attempt
            and env.get(SCOPE_MARKER) == scope
            and attempt not in live
            and process.create_time() <= since
        )
    except psutil.Error:  # gone, a zombie, or another user's: not ours to judge
        return False


def sweep_strays(scope: str, live: frozenset[str] = frozenset(), wait_s: float = 5.0) -> list[int]:
    """SIGKILL every process of this user carrying `MAIA_WORKER_SCOPE=scope` and the
    attempt marker of an attempt not in `live`, wherever it was reparented: the `setsid`
    grandchild of a worker whose Node was killed (`kill -9`) has no tie to this process
    but its environment. The kill goes through `psutil`, which checks the process start
    time, so a pid reused since the scan is never hit. Returns the pids killed. Blocking
    (reads /proc): run it in a thread."""
    since = time.time()
    me, uid = os.getpid(), os.getuid()
    victims = []
    for process in psutil.process_iter(["uids"]):
        uids = process.info.get("uids")
        if process.pid == me or uids is None or uids.real != uid:
            continue
        if _stray_of(process, scope, live, since):
            victims.append(process)
    for process in victims:
        with contextlib.suppress(psutil.Error):
            process.kill()
    psutil.wait_procs(victims, timeout=wait_s)
    return sorted(p.pid for p in victims)


class StderrRing:
    """The last `limit` bytes a worker wrote to stderr."""

    def __init__(self, limit: int = STDERR_RING_BYTES) -> None:
        self._chunks: deque[bytes] = deque()
        self._size = 0
        self._limit = limit
        self.total = 0

    def append(self, data: bytes) -> None:
        self.total += len(data)
        if len(data) >= self._limit:
            self._chunks = deque([data[-self._limit :]])
            self._size = self._limit
            return
        self._chunks.append(data)
        self._size += len(data)
        while self._size - len(self._chunks[0]) >= self._limit:
            self._size -= len(self._chunks.popleft())

    def text(self) -> str:
        """The tail, decoded leniently, at most `limit` bytes."""
        data = b"".join(self._chunks)[-self._limit :]
        return data.decode("utf-8", errors="replace")
