"""A real Node process shared by the SDK tests (trio and asyncio alike talk to it)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from maia.client import Discovery
from tests._node_process import serving_node


@pytest.fixture(scope="module")
def node_process(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Discovery]]:
    """`python -m maia.node start` in the foreground; yields (home, discovery record)."""
    home = tmp_path_factory.mktemp("sdk") / "home"
    argv = [sys.executable, "-m", "maia.node", "start", "--home", str(home)]
    with serving_node(argv, home) as (_, record):
        yield home, record
