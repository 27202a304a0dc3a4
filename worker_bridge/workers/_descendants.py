"""The processes a harness started, found through /proc (Linux), so a stop ends them all.

A harness may run a tool's command in a session of its own (Codex's sandbox helper calls
setsid), outside the harness's process group: killing that group leaves the command running
(reparented to init once its parent dies). So a stop first lists the harness's descendants,
then kills the group, then each listed process that is still alive, with its own group.
Without /proc the list is empty and only the group is killed.
"""

from __future__ import annotations

import contextlib
import os
import signal


def _parent(pid: int) -> int | None:
    """The parent pid of `pid`, or None if it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            data = stat.read()
    except OSError:
        return None
    fields = data[data.rfind(b")") + 2 :].split()  # after "pid (comm) "
    try:
        return int(fields[1])
    except (IndexError, ValueError):
        return None


def descendants(root: int) -> list[int]:
    """Every live descendant of `root` (children before grandchildren)."""
    try:
        pids = [int(name) for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return []
    children: dict[int, list[int]] = {}
    for pid in pids:
        parent = _parent(pid)
        if parent is not None:
            children.setdefault(parent, []).append(pid)
    found: list[int] = []
    todo = [root]
    while todo:
        for pid in children.get(todo.pop(0), []):
            if pid not in found:
                found.append(pid)
                todo.append(pid)
    return found


def kill_escaped(pids: list[int], own_group: int) -> None:
    """SIGKILL each of `pids` still alive, and the process group it leads (never
    `own_group`, the harness's, which the caller kills itself)."""
    for pid in pids:
        with contextlib.suppress(OSError):
            group = os.getpgid(pid)
            if group == pid and group != own_group:
                os.killpg(group, signal.SIGKILL)
            os.kill(pid, signal.SIGKILL)
