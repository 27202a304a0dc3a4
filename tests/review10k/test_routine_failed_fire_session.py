"""The Session of a failed fire is stopped like a settled started fire's: a fire left
`outcome_unknown` by a crash between the Session's creation and its turn.send kept its
Session live (created, never stopped) for good."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import trio

from actors.routine import ROUTINES

from ..maia.service.test_routine_recovery import (
    call,
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


async def test_a_fire_whose_session_failed_before_any_turn_shows_that_failure(
    tmp_path: Path,
) -> None:
    """A fire attached to a Session that failed before any turn (set here in storage: no
    worker fails so early on its own) carries the Session's failure as session.show does,
    code session_failed, without failureReason."""
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    async with node_run(home, launcher=False) as ctx:
        routine_id, fire_id = await routine_with_a_run(ctx, tmp_path)
        await claimed(ctx, fire_id)
        await half_launch(ctx, routine_id, fire_id, send=False)
        session_id = (await ctx.read(lambda c: fire_row(c, fire_id)))[2]
        message = "start failed: the executor's binary is missing"
        await ctx.store.write(lambda c: c.execute(
            "UPDATE sessions SET state = 'failed', failure_message = ? WHERE session_id = ?",
            (message, session_id)))  # fmt: skip
        shown = await call(ctx, "routine.show", {"routineId": routine_id})
    (fire,) = shown.fires
    assert (fire.session_id, fire.turn_id, fire.failure_reason) == (session_id, None, None)
    assert fire.failure is not None
    assert (fire.failure.code, fire.failure.message) == ("session_failed", message)
