"""Routines firing real Sessions (echo workers) on real storage, with the real clock shifted
so a slot is seconds away: the claim, the launch as the scheduler's own actor, the stop of
the settled Session, manual runs, and the scheduler's allow-list."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import trio

from actors.routine import SCHEDULER_PREFIX, scheduler_actor
from maia.config import UserConfig
from maia.core import MaiaError, SystemClock
from maia.service import ServiceContext, open_services
from maia.service._projects import project_add
from maia.service._routine_gate import SchedulerGate
from maia.service._routines import ROUTINE_HANDLERS
from maia.service._sessions import session_create
from maia.service._turns import turn_send
from storage import open_storage

from ._helpers import params
from ._shifted import ShiftedClock, offset_to_slot

WAIT_S = 60  # generous: real workers on a loaded machine


HOUR_MS = 3600 * 1000


def shifted_to_slot(seconds_before: float) -> ShiftedClock:
    """Wall time `seconds_before` the next full hour (an hourly schedule's slot)."""
    return ShiftedClock(offset_to_slot(seconds_before, HOUR_MS))


@pytest.fixture
async def fctx(tmp_path: Path) -> AsyncIterator[ServiceContext]:
    clock = shifted_to_slot(8)  # room for the create's checks on a loaded machine
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    async with (
        open_storage(home / "maia.db", clock=clock, synchronous="NORMAL") as store,
        open_services(store, clock=clock, home=home, config=UserConfig()) as services,
    ):
        yield services


async def call(ctx: ServiceContext, op_id: str, body: dict[str, Any]) -> Any:
    return await ROUTINE_HANDLERS[op_id](ctx, params(op_id, body))


async def make_routine(ctx: ServiceContext, tmp_path: Path, cron: str = "0 * * * *",
                       prompt: str = "hello routine") -> str:  # fmt: skip
    root = tmp_path / "app"
    root.mkdir(exist_ok=True)
    project = await project_add(
        ctx, params("project.add", {"commandId": "p", "rootPath": str(root)})
    )
    body = {
        "commandId": "c1", "name": "tick", "schedule": {"cron": cron, "timezone": "UTC"},
        "template": {"projectId": project.project.project_id, "prompt": prompt},
    }  # fmt: skip
    preview = await call(ctx, "routine.create.preview", body)
    made = await call(ctx, "routine.create.confirm", {**body, "inputDigest": preview.input_digest,
                                                      "proof": preview.proof})  # fmt: skip
    return str(made.routine.routine_id)


async def wait_for(ctx: ServiceContext, routine_id: str, done: Any) -> Any:
    """routine.show until `done(shown)`; bounded."""
    with trio.fail_after(WAIT_S):
        while True:
            shown = await call(ctx, "routine.show", {"routineId": routine_id})
            if done(shown):
                return shown
            await trio.sleep(0.2)


def receipts_of(conn: sqlite3.Connection, session_id: str) -> list[tuple[str, str]]:
    return conn.execute(
        "SELECT actor_id, operation_id FROM receipts WHERE CAST(result AS TEXT) LIKE ?"
        " ORDER BY created_ms",
        (f"%{session_id}%",),
    ).fetchall()


async def test_a_due_slot_fires_a_session_as_the_scheduler_and_stops_it(
    fctx: ServiceContext, tmp_path: Path
) -> None:
    """The slot 8 s away is claimed once, starts a Session whose first turn is the prompt,
    every receipt names the scheduler actor, and the settled Session is stopped."""
    routine_id = await make_routine(fctx, tmp_path)
    shown = await wait_for(fctx, routine_id, lambda s: s.fires and s.fires[0].turn_state
                           == "completed")  # fmt: skip
    (fire,) = shown.fires
    assert (fire.trigger_kind, fire.state, fire.reason) == ("cron", "started", None)
    assert fire.scheduled_at.endswith(":00:00.000Z")
    assert shown.routine.next_fire_at > fire.scheduled_at
    actors = await fctx.read(lambda c: receipts_of(c, fire.session_id))
    assert ("actor_node-automation_routine-scheduler_" + routine_id, "session.create") in actors
    assert (scheduler_actor(routine_id), "turn.send") in actors
    assert all(a.startswith(SCHEDULER_PREFIX) for a, _ in actors)

    def session_state(conn: sqlite3.Connection) -> str:
        found = conn.execute("SELECT state FROM sessions WHERE session_id = ?", (fire.session_id,))
        return str(found.fetchone()[0])

    with trio.fail_after(WAIT_S):
        while await fctx.read(session_state) != "stopped":  # noqa: ASYNC110 (storage, no event)
            await trio.sleep(0.2)
    events = await fctx.read(
        lambda c: [
            r[0]
            for r in c.execute(
                "SELECT event_type FROM events WHERE owner_id = ? ORDER BY owner_seq", (routine_id,)
            )
        ]
    )
    assert events[:1] == ["routine.created"]
    assert {"routine.fire_launching", "routine.slot_claimed", "routine.fire_attached",
            "routine.fire_started"} <= set(events)  # fmt: skip


async def test_a_manual_run_is_claimed_by_the_next_tick_and_starts_a_session(
    fctx: ServiceContext, tmp_path: Path
) -> None:
    """run.confirm records a launching manual fire; the routine's next tick claims it and
    the scheduler starts it; nextFireAt does not move."""
    routine_id = await make_routine(fctx, tmp_path, cron="0 0 1 1 *")
    before = (await call(fctx, "routine.show", {"routineId": routine_id})).routine.next_fire_at
    change = {"commandId": "run1", "routineId": routine_id, "expectedRevision": 1}
    preview = await call(fctx, "routine.run.preview", change)
    await call(fctx, "routine.run.confirm", {**change, "inputDigest": preview.input_digest,
                                             "proof": preview.proof})  # fmt: skip
    shown = await wait_for(fctx, routine_id, lambda s: s.fires[0].turn_state == "completed")
    assert (shown.fires[0].trigger_kind, shown.fires[0].state) == ("manual", "started")
    assert shown.routine.next_fire_at == before


async def test_the_scheduler_may_call_only_what_the_spec_allows(
    fctx: ServiceContext, tmp_path: Path
) -> None:
    """Outside the allow-list, another Project, extra create fields, or another Session:
    role_denied, and nothing is called."""
    routine_id = await make_routine(fctx, tmp_path, cron="0 0 1 1 *")
    gate = SchedulerGate(fctx)
    project_id = (
        await call(fctx, "routine.show", {"routineId": routine_id})
    ).routine.template.project_id
    denied: list[tuple[str, dict[str, Any], str | None]] = [
        ("project.add", {"commandId": "x", "rootPath": "/tmp"}, None),
        ("routine.pause", {"commandId": "x", "routineId": routine_id, "expectedRevision": 1}, None),
        ("session.create", {"commandId": "x", "projectId": "project_" + "0" * 32}, None),
        ("session.create", {"commandId": "x", "projectId": project_id, "title": "mine"}, None),
        ("turn.send", {"commandId": "x", "sessionId": "session_b", "text": "hi"}, "session_a"),
        ("session.stop", {"commandId": "x", "sessionId": "session_b"}, None),
    ]
    for op_id, body, own in denied:
        with pytest.raises(MaiaError) as caught:
            await gate.call(routine_id, op_id, body, project_id=project_id, session_id=own)
        assert caught.value.code == "role_denied", op_id
    body = {"commandId": "ok", "projectId": project_id}
    made = await gate.call(routine_id, "session.create", body, project_id=project_id,
                           session_id=None)  # fmt: skip
    receipt = await fctx.read(
        lambda c: c.execute(
            "SELECT actor_id FROM receipts WHERE receipt_id = ?", (made.receipt_id,)
        ).fetchone()
    )
    assert receipt[0] == scheduler_actor(routine_id)


SLOW = json.dumps({
    "executors": {"slow": {"kind": "exec", "argv": ["/bin/sh", "-c", "sleep 3; echo done"]}},
    "swarm": {"capacity": {"maxLiveSessions": 1}},
})  # fmt: skip


async def test_a_saturated_launch_stays_launching_and_is_retried_until_it_starts(
    tmp_path: Path,
) -> None:
    """One worker slot, held by a busy Session: the run's turn.send is refused saturated,
    the fire stays launching (routine.fire_saturated), and a later tick starts it."""
    clock = SystemClock()
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    (home / "config.jsonc").write_text(SLOW, encoding="utf-8")
    async with (
        open_storage(home / "maia.db", clock=clock, synchronous="NORMAL") as store,
        open_services(store, clock=clock, home=home) as ctx,
    ):
        routine_id = await make_routine(ctx, tmp_path, cron="0 0 1 1 *")
        project_id = (
            await call(ctx, "routine.show", {"routineId": routine_id})
        ).routine.template.project_id
        busy = await session_create(ctx, params("session.create", {
            "commandId": "s", "projectId": project_id, "executor": "user:slow"}))  # fmt: skip
        await turn_send(ctx, params("turn.send", {
            "commandId": "t", "sessionId": busy.session.session_id, "text": "work"}))  # fmt: skip
        change = {"commandId": "run1", "routineId": routine_id, "expectedRevision": 1}
        preview = await call(ctx, "routine.run.preview", change)
        await call(ctx, "routine.run.confirm", {**change, "inputDigest": preview.input_digest,
                                                "proof": preview.proof})  # fmt: skip

        def saturations(conn: sqlite3.Connection) -> int:
            return int(conn.execute("SELECT count(*) FROM events WHERE owner_id = ? AND"
                                    " event_type = 'routine.fire_saturated'",
                                    (routine_id,)).fetchone()[0])  # fmt: skip

        with trio.fail_after(WAIT_S):
            while await ctx.read(saturations) == 0:  # noqa: ASYNC110 (storage, no event)
                await trio.sleep(0.05)
        shown = await call(ctx, "routine.show", {"routineId": routine_id})
        assert (shown.fires[0].state, shown.fires[0].reason) == ("launching", None)
        shown = await wait_for(ctx, routine_id, lambda s: s.fires[0].state == "started")
        assert shown.fires[0].reason is None
