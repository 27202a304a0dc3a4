"""Crash recovery of launching fires, each branch made certain: a Node run stops with a
claimed fire half launched, the next run on the same database resolves it before serving:
`started` only from the scheduler's own turn.send receipt on the fire's Session, else
`failed`/`outcome_unknown`; an unclaimed manual fire waits for its routine's next tick."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import trio

from actors.routine import ROUTINES, Attached, LaunchAnswer, LauncherSlot, get_fire, get_routine
from maia.config import UserConfig
from maia.core import SystemClock
from maia.service import SchedulerGate, ServiceContext, open_services, running_kind
from maia.service._projects import project_add
from maia.service._routines import ROUTINE_HANDLERS
from storage import open_storage

from ._helpers import params

Step = Callable[[ServiceContext, str, str], Awaitable[None]]


@asynccontextmanager
async def node_run(home: Path, *, launcher: bool) -> AsyncIterator[ServiceContext]:
    """One Node run's services on `home` (the launcher withheld: claims stay launching)."""
    clock = SystemClock()
    async with (
        open_storage(home / "maia.db", clock=clock, synchronous="NORMAL") as store,
        open_services(store, clock=clock, home=home, config=UserConfig()) as services,
    ):
        if not launcher:  # the kind opens on demand: open it to withhold its launcher
            await running_kind(services.runtime, ROUTINES)
            services.runtime.extension(LauncherSlot).launcher = None
        yield services


async def call(ctx: ServiceContext, op_id: str, body: dict[str, Any]) -> Any:
    return await ROUTINE_HANDLERS[op_id](ctx, params(op_id, body))


async def routine_with_a_run(ctx: ServiceContext, tmp_path: Path) -> tuple[str, str]:
    root = tmp_path / "app"
    root.mkdir()
    project = await project_add(
        ctx, params("project.add", {"commandId": "p", "rootPath": str(root)})
    )
    body = {"commandId": "c1", "name": "r", "schedule": {"cron": "0 0 1 1 *", "timezone": "UTC"},
            "template": {"projectId": project.project.project_id, "prompt": "hi"}}  # fmt: skip
    preview = await call(ctx, "routine.create.preview", body)
    made = await call(ctx, "routine.create.confirm", {**body, "inputDigest": preview.input_digest,
                                                      "proof": preview.proof})  # fmt: skip
    routine_id = made.routine.routine_id
    change = {"commandId": "run", "routineId": routine_id, "expectedRevision": 1}
    preview = await call(ctx, "routine.run.preview", change)
    ran = await call(ctx, "routine.run.confirm", {**change, "inputDigest": preview.input_digest,
                                                  "proof": preview.proof})  # fmt: skip
    return routine_id, ran.fire.fire_id


async def claimed(ctx: ServiceContext, fire_id: str) -> None:
    """Until the routine's tick has claimed the fire (bounded)."""

    def claim_of(conn: sqlite3.Connection) -> int | None:
        fire = get_fire(conn, fire_id)
        return None if fire is None else fire.claimed_ms

    with trio.fail_after(30):
        while await ctx.read(claim_of) is None:  # noqa: ASYNC110 (storage, no event)
            await trio.sleep(0.05)


async def half_launch(ctx: ServiceContext, routine_id: str, fire_id: str, *, send: bool) -> str:
    """What a launch does before the crash: the Session, attached; the prompt, if `send`."""
    gate = SchedulerGate(ctx)
    routine, fire = await ctx.read(lambda c: (get_routine(c, routine_id), get_fire(c, fire_id)))
    assert routine is not None
    assert fire is not None
    session_id = await gate.create_session(routine, fire)
    await ctx.runtime[ROUTINES].ask(routine_id, LaunchAnswer(Attached(fire_id, session_id)))
    if send:
        fire = await ctx.read(lambda c: get_fire(c, fire_id))
        assert fire is not None
        return await gate.send_turn(routine, fire, session_id)
    return ""


def fire_row(conn: sqlite3.Connection, fire_id: str) -> tuple[Any, ...]:
    return tuple(conn.execute(
        "SELECT state, reason, session_id, turn_id FROM routine_fires WHERE fire_id = ?",
        (fire_id,)).fetchone())  # fmt: skip


async def test_a_fire_whose_turn_was_sent_recovers_as_started(tmp_path: Path) -> None:
    """The scheduler's turn.send receipt on the attached Session exists: started, with it."""
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    async with node_run(home, launcher=False) as ctx:
        routine_id, fire_id = await routine_with_a_run(ctx, tmp_path)
        await claimed(ctx, fire_id)
        turn_id = await half_launch(ctx, routine_id, fire_id, send=True)
        assert (await ctx.read(lambda c: fire_row(c, fire_id)))[0] == "launching"
    async with node_run(home, launcher=False) as ctx:
        state, reason, session_id, recovered_turn = await ctx.read(lambda c: fire_row(c, fire_id))
    assert (state, reason, recovered_turn) == ("started", None, turn_id)
    assert session_id is not None


async def test_a_fire_without_the_receipt_recovers_as_outcome_unknown(tmp_path: Path) -> None:
    """Attached but never sent (or not attached at all): failed, outcome_unknown."""
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    async with node_run(home, launcher=False) as ctx:
        routine_id, fire_id = await routine_with_a_run(ctx, tmp_path)
        await claimed(ctx, fire_id)
        await half_launch(ctx, routine_id, fire_id, send=False)
    async with node_run(home, launcher=False) as ctx:
        state, reason, session_id, turn_id = await ctx.read(lambda c: fire_row(c, fire_id))
    assert (state, reason, turn_id) == ("failed", "outcome_unknown", None)
    assert session_id is not None


async def test_an_unclaimed_manual_fire_survives_for_the_next_tick(tmp_path: Path) -> None:
    """A manual fire recorded but not claimed when the Node stopped is claimed and started
    by its routine's next tick in the next run."""
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    async with node_run(home, launcher=False) as ctx:
        routine_id, fire_id = await _unclaimed_run(ctx, tmp_path)
    async with node_run(home, launcher=True) as ctx:
        with trio.fail_after(60):
            while (await ctx.read(lambda c: fire_row(c, fire_id)))[0] == "launching":  # noqa: ASYNC110
                await trio.sleep(0.1)
        state, reason, _, _ = await ctx.read(lambda c: fire_row(c, fire_id))
    assert (state, reason) == ("started", None)
    assert routine_id.startswith("routine_")


async def _unclaimed_run(ctx: ServiceContext, tmp_path: Path) -> tuple[str, str]:
    """A run whose claim never happened: the fire row is put back to unclaimed and its
    routine's timer row dropped, as if the Node stopped between the run's commit and its
    routine's tick and the timer were lost (the worst case)."""
    routine_id, fire_id = await routine_with_a_run(ctx, tmp_path)
    await claimed(ctx, fire_id)

    def unclaim(conn: sqlite3.Connection) -> None:
        conn.execute("UPDATE routine_fires SET claimed_ms = NULL WHERE fire_id = ?", (fire_id,))
        conn.execute("DELETE FROM actor_timers WHERE actor_id = ?", (routine_id,))

    await ctx.store.write(unclaim)
    return routine_id, fire_id
