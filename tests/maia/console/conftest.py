"""A real Node process shared by the console tests (one per module: starting one costs)."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from maia.client import read_discovery


@pytest.fixture(scope="module")
def node_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """`python -m maia.node start` in the foreground on a fresh home; yields the home."""
    home = tmp_path_factory.mktemp("console") / "home"
    log = home.parent / "node.err"
    with log.open("wb") as sink:
        process = subprocess.Popen(
            [sys.executable, "-m", "maia.node", "start", "--home", str(home)],
            stdout=subprocess.DEVNULL,
            stderr=sink,
        )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and process.poll() is None:
            record = read_discovery(home / "node.json")
            if record is not None and record.pid == process.pid and record.is_live():
                break
            time.sleep(0.05)
        else:
            raise AssertionError(f"the Node did not start: {log.read_text()[-2000:]}")
        yield home
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
