"""A real Node process shared by the console tests (one per module: starting one costs)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests._node_process import stop_node, wait_for_discovery


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
        if wait_for_discovery(process, home) is None:
            raise AssertionError(f"the Node did not start: {log.read_text()[-2000:]}")
        yield home
    finally:
        stop_node(process)
