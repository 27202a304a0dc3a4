"""A real Node for the review's kill -9 tests: `python -m maia.node start` on `base/home`
with an agent config and a loopback-only environment, killable with SIGKILL (the context
manager's exit stops it, bounded, if it still runs)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from maia.client import read_discovery
from tests.maia.agents._node import node_home
from tests.maia.cli._node import Cli

START_S = 60


@contextmanager
def killable_node(
    base: Path, config: str, env: dict[str, str]
) -> Iterator[tuple[Cli, subprocess.Popen[bytes]]]:
    """A started Node (a second start on the same `base` is a restart) and its process."""
    cli, environment = node_home(base, config, env)
    home = cli.home
    with (base / "node.stderr").open("ab") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "maia.node", "start", "--home", str(home)],
            stdout=subprocess.DEVNULL, stderr=log, env=environment,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + START_S
        while time.monotonic() < deadline and process.poll() is None:
            record = read_discovery(home / "node.json")
            if record is not None and record.pid == process.pid:
                break
            time.sleep(0.05)
        else:
            raise AssertionError("the Node did not start")
        yield cli, process
    finally:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def kill_9(process: subprocess.Popen[bytes]) -> None:
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=30)


def processes_with(marker: str) -> list[int]:
    """Live pids whose command line or environment holds `marker` (our own excluded)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            blob = (entry / "environ").read_bytes() + (entry / "cmdline").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker.encode() in blob and state != "Z":
            found.append(int(entry.name))
    return found


def wait_until_gone(marker: str, timeout_s: float = 30.0) -> list[int]:
    """The processes still holding `marker` after up to `timeout_s` (empty once all went)."""
    deadline = time.monotonic() + timeout_s
    left = processes_with(marker)
    while left and time.monotonic() < deadline:
        time.sleep(0.2)
        left = processes_with(marker)
    return left
