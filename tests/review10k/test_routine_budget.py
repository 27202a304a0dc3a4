"""A routine-fired Session's turns are checked against maxDailyCostMicros like any other:
with today's budget spent, the fire's turn.send is refused (budget_exceeded), no turn is
queued, the fire fails launch_failed and its turnless Session is stopped."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import trio

from maia.config import CapacityLimits, UserConfig
from maia.service import ServiceContext, open_services
from storage import open_storage

from ..maia.service.test_routine_fires import make_routine, shifted_to_slot, wait_for
from .test_routine_fire_failures import run_once, settled

BOUND_S = 60


@pytest.fixture
async def spent(tmp_path: Path) -> AsyncIterator[ServiceContext]:
    """A Node whose daily budget is 0: today's turns have already cost all of it."""
    clock = shifted_to_slot(8)
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    config = UserConfig(capacity=CapacityLimits(max_daily_cost_micros=0, currency="USD"))
    async with (
        open_storage(home / "maia.db", clock=clock, synchronous="NORMAL") as store,
        open_services(store, clock=clock, home=home, config=config) as services,
    ):
        yield services


async def test_a_fire_under_a_spent_budget_sends_no_turn(
    spent: ServiceContext, tmp_path: Path
) -> None:
    """The fire fails launch_failed without a turn; its Session is stopped."""
    routine_id = await make_routine(spent, tmp_path, cron="0 0 1 1 *")
    await run_once(spent, routine_id)
    (fire,) = (await wait_for(spent, routine_id, settled)).fires
    assert (fire.state, fire.reason, fire.turn_id) == ("failed", "launch_failed", None)
    assert fire.session_id is not None

    def rows(conn: sqlite3.Connection) -> Any:
        turns = conn.execute("SELECT count(*) FROM turns").fetchone()[0]
        state = conn.execute("SELECT state FROM sessions WHERE session_id = ?",
                             (fire.session_id,)).fetchone()[0]  # fmt: skip
        return turns, state

    with trio.fail_after(BOUND_S):
        while (await spent.read(rows))[1] != "stopped":  # noqa: ASYNC110 (storage)
            await trio.sleep(0.2)
    assert (await spent.read(rows))[0] == 0
