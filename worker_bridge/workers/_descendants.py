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


def _stat(pid: int) -> tuple[int, int] | None:
    """(parent pid, start time in clock ticks) of `pid`, or None if it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            data = stat.read()
    except OSError:
        return None
    fields = data[data.rfind(b")") + 2 :].split()  # after "pid (comm) ": state, ppid, …
    try:
        return int(fields[1]), int(fields[19])
    except (IndexError, ValueError):
        return None


def descendants(root: int) -> list[tuple[int, int]]:
    """Every live descendant of `root` as (pid, start time), children before grandchildren."""
    try:
        pids = [int(name) for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return []
    children: dict[int, list[tuple[int, int]]] = {}
    for pid in pids:
        found = _stat(pid)
        if found is not None:
            children.setdefault(found[0], []).append((pid, found[1]))
    result: list[tuple[int, int]] = []
    todo = [root]
    while todo:
        for child in children.get(todo.pop(0), []):
            if child not in result:
                result.append(child)
                todo.append(child[0])
    return result


def kill_escaped(listed: list[tuple[int, int]], own_group: int) -> None:
    """SIGKILL each listed process still alive, and the process group it leads (never
    `own_group`, the harness's, which the caller kills itself). A pid whose start time
    changed is another process by now (the pid was reused): left alone."""
    for pid, started in listed:
        now = _stat(pid)
        if now is None or now[1] != started:
            continue
        with contextlib.suppress(OSError):
            group = os.getpgid(pid)
            if group == pid and group != own_group:
                os.killpg(group, signal.SIGKILL)
            os.kill(pid, signal.SIGKILL)
