"""maxPendingRoutineTicks on real storage, real workers and the real scheduler: a Project's
claimed fires are launched at most that many at once; the rest wait, still launching."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from maia.core import SystemClock
from maia.service import ServiceContext, open_services
from maia.service._projects import project_add
from maia.service._sessions import session_create
from maia.service._turns import turn_send
from storage import open_storage

from ._helpers import params
from .test_routine_fires import call, wait_for

# The busy turn holds the only worker slot long enough for both runs to be claimed (margin
# for a loaded machine): the first fire is then refused saturated while the second waits.
ONE_AT_A_TIME = json.dumps({
    "executors": {"slow": {"kind": "exec", "argv": ["/bin/sh", "-c", "sleep 12; echo done"]}},
    "swarm": {"capacity": {"maxLiveSessions": 1, "maxPendingRoutineTicks": 1}},
})  # fmt: skip


async def make_routines(ctx: ServiceContext, root: Path, names: list[str]) -> tuple[str, list[str]]:
    """A Project at `root` and one yearly routine per name in it: (Project, routines)."""
    project = await project_add(
        ctx, params("project.add", {"commandId": "p", "rootPath": str(root)})
    )
    project_id = project.project.project_id
    routines = []
    for name in names:
        body = {
            "commandId": f"c-{name}", "name": name,
            "schedule": {"cron": "0 0 1 1 *", "timezone": "UTC"},
            "template": {"projectId": project_id, "prompt": "hello routine"},
        }  # fmt: skip
        preview = await call(ctx, "routine.create.preview", body)
        made = await call(ctx, "routine.create.confirm", {**body, "inputDigest":
                          preview.input_digest, "proof": preview.proof})  # fmt: skip
        routines.append(str(made.routine.routine_id))
    return project_id, routines


async def run_now(ctx: ServiceContext, routine_id: str) -> None:
    change = {"commandId": f"run-{routine_id}", "routineId": routine_id, "expectedRevision": 1}
    preview = await call(ctx, "routine.run.preview", change)
    await call(ctx, "routine.run.confirm", {**change, "inputDigest": preview.input_digest,
                                            "proof": preview.proof})  # fmt: skip


def fire_events(conn: sqlite3.Connection, routines: list[str]) -> list[tuple[str, str]]:
    """(routine, event type) of the routines' fire events, in the order they were written."""
    rows = conn.execute(
        "SELECT owner_id, event_type FROM events WHERE owner_id IN (?, ?)"
        " AND event_type IN ('routine.fire_attached', 'routine.fire_saturated',"
        " 'routine.fire_started', 'routine.fire_failed') ORDER BY position",
        routines,
    ).fetchall()
    return [(str(r[0]), str(r[1])) for r in rows]


async def test_a_projects_fires_launch_one_at_a_time_under_a_limit_of_one(
    tmp_path: Path,
) -> None:
    """Limit 1, two routines of one Project run together, the only worker slot busy: the
    first fire is attached and saturated, and the second is not attached (not attempted)
    until the first has started; then both start."""
    clock = SystemClock()
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    (tmp_path / "app").mkdir()
    (home / "config.jsonc").write_text(ONE_AT_A_TIME, encoding="utf-8")
    async with (
        open_storage(home / "maia.db", clock=clock, synchronous="NORMAL") as store,
        open_services(store, clock=clock, home=home) as ctx,
    ):
        project_id, routines = await make_routines(ctx, tmp_path / "app", ["one", "two"])
        busy = await session_create(ctx, params("session.create", {
            "commandId": "s", "projectId": project_id, "executor": "user:slow"}))  # fmt: skip
        await turn_send(ctx, params("turn.send", {
            "commandId": "t", "sessionId": busy.session.session_id, "text": "work"}))  # fmt: skip
        for routine_id in routines:
            await run_now(ctx, routine_id)
        for routine_id in routines:
            await wait_for(ctx, routine_id, lambda s: s.fires[0].state == "started")
        events: list[Any] = await ctx.read(lambda c: fire_events(c, routines))
    first = events[0][0]
    (second,) = (r for r in routines if r != first)
    assert (first, "routine.fire_saturated") in events  # the first waited for the slot
    started_first = events.index((first, "routine.fire_started"))
    attached_second = events.index((second, "routine.fire_attached"))
    assert started_first < attached_second, events
    assert (second, "routine.fire_started") in events[attached_second:]
    assert all(kind != "routine.fire_failed" for _, kind in events)
