"""Fixtures: a real Node served in the test's trio run, on a real loopback port."""

from __future__ import annotations

from pathlib import Path

import attrs
import pytest
import trio

from maia.core import read_token
from maia.node import NodeConfig, NodeHome, NodeRunning, serve_node

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
