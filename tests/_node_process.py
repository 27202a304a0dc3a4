"""A real Node process for the end-to-end tests: `python -m maia.node start` on a home of
its own, restartable, killable with SIGKILL, stopped (bounded) at the end."""

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

START_S = 60


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
        deadline = time.monotonic() + START_S
        while time.monotonic() < deadline and self.process.poll() is None:
            record = read_discovery(self.home / "node.json")
            if record is not None and record.pid == self.process.pid:
                return
            time.sleep(0.05)
        raise AssertionError("the Node did not start")

    def kill(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=30)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.process.kill()


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
