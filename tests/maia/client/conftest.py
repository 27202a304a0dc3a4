"""A real Node process shared by the SDK tests (trio and asyncio alike talk to it)."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from maia.client import Discovery, read_discovery


@pytest.fixture(scope="module")
def node_process(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Discovery]]:
    """`python -m maia.node start` in the foreground; yields (home, discovery record)."""
    home = tmp_path_factory.mktemp("sdk") / "home"
    process = subprocess.Popen(
        [sys.executable, "-m", "maia.node", "start", "--home", str(home)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 60
        record = None
        while time.monotonic() < deadline and process.poll() is None:
            record = read_discovery(home / "node.json")
            if record is not None and record.pid == process.pid:
                break
            time.sleep(0.05)
        assert record is not None, "the Node did not start"
        assert record.pid == process.pid
        yield home, record
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
            assert process.stderr is not None
            process.stderr.close()
