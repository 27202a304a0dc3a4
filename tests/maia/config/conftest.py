"""Fixtures of the configuration tests: a private home and Project roots, real storage and
the real service context (the handlers called directly, no socket)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from maia.config import UserConfig
from maia.protocol import SystemClock
from maia.service import ServiceContext, open_services
from storage import open_storage


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir(mode=0o700)
    return path


@pytest.fixture
def work(tmp_path: Path) -> Path:
    """A private folder for Project roots (roots directly in /tmp are refused)."""
    path = tmp_path / "work"
    path.mkdir(mode=0o700)
    return path


@pytest.fixture
async def ctx(home: Path) -> AsyncIterator[ServiceContext]:
    async with (
        open_storage(home / "maia.db", clock=SystemClock(), synchronous="NORMAL") as store,
        open_services(store, clock=SystemClock(), home=home, config=UserConfig()) as services,
    ):
        yield services
