"""Fixtures of the machine tests: handlers on real storage and a real runtime."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from maia.config import UserConfig
from maia.protocol import SystemClock
from maia.service import ServiceContext, open_services
from storage import open_storage


@pytest.fixture
async def ctx(tmp_path: Path) -> AsyncIterator[ServiceContext]:
    home = tmp_path / "control"
    home.mkdir(mode=0o700)
    async with (
        open_storage(home / "maia.db", clock=SystemClock(), synchronous="NORMAL") as store,
        open_services(store, clock=SystemClock(), home=home, config=UserConfig()) as services,
    ):
        yield services
