"""A real Node process for the end-to-end tests: `python -m maia.node start` on a home of
its own, restartable, killable with SIGKILL, stopped (bounded) at the end; and the start-up
every real-Node test shares (wait for the discovery record that names the process, then
SIGTERM with a bounded wait), whatever command line starts it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from maia.core import Discovery, read_discovery

START_S = 60
STOP_S = 60
Sink = IO[Any] | int | None  # what Popen takes as stdout or stderr


def wait_for_discovery(
    process: subprocess.Popen[Any], home: Path, timeout_s: float = START_S
) -> Discovery | None:
    """The discovery record in `home` once it names `process` (polled every 50 ms for at
    most `timeout_s`); None if the process exits or the time runs out first."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and process.poll() is None:
        record = read_discovery(home / "node.json")
        if record is not None and record.pid == process.pid:
            return record
        time.sleep(0.05)
    return None


def stop_node(process: subprocess.Popen[Any], timeout_s: float = STOP_S) -> int:
    """SIGTERM (a clean stop) and wait at most `timeout_s`; SIGKILL if it still runs then.
    Its exit status."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=timeout_s)
    return process.returncode


def run_until_serving_then_sigterm(
    argv: list[str], home: Path, *, stdout: Sink, stderr: Sink, timeout_s: float = START_S
) -> int:
    """`argv` (a foreground Node on `home`) run until its discovery record names it (or it
    exits, or `timeout_s` passes: the caller's checks of its output then fail), then
    stopped with SIGTERM (`stop_node`). Its exit status."""
    process = subprocess.Popen(argv, stdout=stdout, stderr=stderr)
    try:
        wait_for_discovery(process, home, timeout_s)
    finally:
        status = stop_node(process, timeout_s)
    return status


@contextmanager
def serving_node(
    argv: list[str],
    home: Path,
    *,
    stdout: Sink = subprocess.DEVNULL,
    stderr: Sink = subprocess.DEVNULL,
    env: dict[str, str] | None = None,
) -> Iterator[tuple[subprocess.Popen[bytes], Discovery]]:
    """`argv` (a Node start on `home`) started and yielded with its discovery record once
    that names it (AssertionError if it does not within START_S); `stop_node` on exit,
    after which its `returncode` is set."""
    process = subprocess.Popen(argv, stdout=stdout, stderr=stderr, env=env)
    try:
        record = wait_for_discovery(process, home)
        if record is None:
            raise AssertionError("the Node did not start")
        yield process, record
    finally:
        stop_node(process)


class NodeProcess:
    """`python -m maia.node start` on `home` with `env` added to its environment."""

    def __init__(self, home: Path, env: dict[str, str]) -> None:
        self.home = home
        self.env = env
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        """Start it and return once its discovery record names this process (bounded)."""
        self.process = subprocess.Popen(
            [sys.executable, "-m", "maia.node", "start", "--home", str(self.home)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env={**os.environ, **self.env},
        )
        if wait_for_discovery(self.process, self.home) is None:
            raise AssertionError("the Node did not start")

    def kill(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=30)

    def stop(self) -> None:
        if self.process is not None:
            stop_node(self.process)


@contextmanager
def running_node(tmp_path: Path, config: str, env: dict[str, str]) -> Iterator[NodeProcess]:
    """A started Node on `tmp_path/home` (0700) with `config` as its config.jsonc."""
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    (home / "config.jsonc").write_text(config)
    process = NodeProcess(home, env)
    process.start()
    try:
        yield process
    finally:
        process.stop()
