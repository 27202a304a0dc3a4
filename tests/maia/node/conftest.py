"""Fixtures: a real Node served in the test's trio run, on a real loopback port, or in a
process of its own."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest
import trio

from maia.core import read_token
from maia.node import NodeConfig, NodeHome, NodeRunning, serve_node

from ..._node_process import serving_node
from ._raw import port_of


@attrs.frozen
class LiveNode:
    running: NodeRunning
    home: NodeHome
    token: str

    @property
    def url(self) -> str:
        return self.running.url

    @property
    def port(self) -> int:
        return port_of(self.running.url)

    @property
    def auth(self) -> list[tuple[bytes, bytes]]:
        return [(b"Authorization", f"Bearer {self.token}".encode())]


@pytest.fixture
async def node(nursery: trio.Nursery, tmp_path: Path) -> LiveNode:
    """A Node on a fresh home under tmp_path; stopped when the test ends."""
    home = NodeHome(tmp_path / "home")
    running: NodeRunning = await nursery.start(serve_node, NodeConfig(home))
    return LiveNode(running, home, read_token(home.token_path))


@attrs.frozen
class NodeProcess:
    """A real `python -m maia.node start` process and what a client needs to reach it."""

    process: subprocess.Popen[bytes]
    home: NodeHome
    token: str
    port: int

    @property
    def auth(self) -> list[tuple[bytes, bytes]]:
        return [(b"Authorization", f"Bearer {self.token}".encode())]


@pytest.fixture(scope="module")
def node_process(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NodeProcess]:
    """A Node in its own process for the whole module (its output in <home>/test.log)."""
    home = NodeHome(tmp_path_factory.mktemp("node") / "home")
    home.ensure()
    argv = [sys.executable, "-m", "maia.node", "start", "--home", str(home.root)]
    with (
        (home.root / "test.log").open("wb") as log,
        serving_node(argv, home.root, stdout=log, stderr=log) as (process, record),
    ):
        yield NodeProcess(process, home, read_token(home.token_path), port_of(record.url))
