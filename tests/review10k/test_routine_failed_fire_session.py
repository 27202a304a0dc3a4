"""The Session of a failed fire is stopped like a settled started fire's: a fire left
`outcome_unknown` by a crash between the Session's creation and its turn.send kept its
Session live (created, never stopped) for good."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import trio

from actors.routine import ROUTINES

from ..maia.service.test_routine_recovery import (
    claimed,
    fire_row,
    half_launch,
    node_run,
    routine_with_a_run,
)

BOUND_S = 60


async def test_an_outcome_unknown_fires_session_is_stopped(tmp_path: Path) -> None:
    """Attached but never sent, the Node stops; in the next run the fire fails
    outcome_unknown and the scheduler's tick stops its turnless Session."""
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    async with node_run(home, launcher=False) as ctx:
        routine_id, fire_id = await routine_with_a_run(ctx, tmp_path)
        await claimed(ctx, fire_id)
        await half_launch(ctx, routine_id, fire_id, send=False)
    async with node_run(home, launcher=True) as ctx:
        state, reason, session_id, _ = await ctx.read(lambda c: fire_row(c, fire_id))
        assert (state, reason) == ("failed", "outcome_unknown")

        def session_state(conn: sqlite3.Connection) -> str:
            row = conn.execute("SELECT state FROM sessions WHERE session_id = ?", (session_id,))
            return str(row.fetchone()[0])

        with trio.fail_after(BOUND_S):
            while await ctx.read(session_state) != "stopped":
                ctx.runtime[ROUTINES].scheduler.poke()
                await trio.sleep(0.2)
