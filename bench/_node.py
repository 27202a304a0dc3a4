"""A real Node process for a benchmark: started in the foreground on a home, ready once its
discovery file names its pid (bounded: 60 s), killed by the caller."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from maia.core import read_discovery

START_BOUND_S = 60.0


def start_node(
    home: Path, bench: str, *, env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.Popen[bytes]:
    """`python -P -m maia.node start --home HOME` (-P: the cwd is not put on sys.path), once
    it answers; exits the benchmark naming `bench` if it does not start."""
    process = subprocess.Popen(
        [sys.executable, "-P", "-m", "maia.node", "start", "--home", str(home)],
        env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    deadline = time.monotonic() + START_BOUND_S
    while time.monotonic() < deadline:
        record = read_discovery(home / "node.json")
        if record is not None and record.pid == process.pid:
            return process
        if process.poll() is not None:
            break
        time.sleep(0.05)
    process.kill()
    raise SystemExit(f"{bench}: the Node did not start")
