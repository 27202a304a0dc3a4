"""A worker's `setsid` grandchild outlives `kill -9` of its Node (nothing is its subreaper
any more); the next Node started on the same home sweeps it as it starts."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from ._node import Cli, start_node, stop_node


def alive(pid: int) -> bool:
    """Whether /proc shows `pid` as a process that is not a zombie."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    return "State:\tZ" not in status


def test_a_grandchild_of_a_killed_node_is_gone_once_the_node_restarts(tmp_path: Path) -> None:
    """`/grandchild` starts `sleep 3600` in a new session; SIGKILL the Node: the grandchild
    lives on; start the Node again on the home: it is killed during the start."""
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    cli = Cli(home, project)
    grandchild = 0
    node = start_node(home)
    try:
        assert cli("session", "create", "--title", "escaper").returncode == 0
        sent = cli("turn", "send", "escaper", "/grandchild", "--wait", "--timeout", "60s")
        assert sent.returncode == 0, sent.stderr
        grandchild = int(sent.stdout.split()[1])
        node.send_signal(signal.SIGKILL)
        node.wait(timeout=30)
        assert alive(grandchild)  # the bug's first half: nothing took it down
        node = start_node(home)
        deadline = time.monotonic() + 30  # the sweep runs while the Node starts
        while alive(grandchild) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not alive(grandchild)
        assert cli("turn", "send", "escaper", "after", "--wait").stdout == "after\n"
    finally:
        stop_node(node)
        if grandchild and alive(grandchild):
            os.kill(grandchild, signal.SIGKILL)
