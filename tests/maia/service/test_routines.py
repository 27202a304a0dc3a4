"""routine.* handlers on real storage and a real home, with a fake clock for expiry:
preview → confirm, the closed error set, and every refusal changing nothing."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import trio

from actors.routine import ROUTINES, LauncherSlot
from maia.config import UserConfig
from maia.core import FakeClock, MaiaError
from maia.service import ServiceContext, open_services, running_kind
from maia.service._projects import project_add
from maia.service._routines import ROUTINE_HANDLERS
from storage import open_storage

from ._helpers import params

START = 1_767_222_000_000  # 2025-12-31T23:00:00Z


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(wall=START)


@pytest.fixture
async def rctx(tmp_path: Path, clock: FakeClock) -> AsyncIterator[ServiceContext]:
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    async with (
        open_storage(home / "maia.db", clock=clock, synchronous="NORMAL") as store,
        open_services(store, clock=clock, home=home, config=UserConfig()) as services,
    ):
        yield services


async def call(ctx: ServiceContext, op_id: str, body: dict[str, Any]) -> Any:
    return await ROUTINE_HANDLERS[op_id](ctx, params(op_id, body))


async def refused(ctx: ServiceContext, op_id: str, body: dict[str, Any]) -> MaiaError:
    """Call and expect a refusal that leaves the routine tables and receipts as they were."""
    before = await ctx.read(snapshot)
    with pytest.raises(MaiaError) as caught:
        await call(ctx, op_id, body)
    assert await ctx.read(snapshot) == before
    return caught.value


def snapshot(conn: sqlite3.Connection) -> tuple[Any, ...]:
    return tuple(
        conn.execute(f"SELECT * FROM {table} ORDER BY 1").fetchall()
        for table in ("routines", "routine_fires", "receipts", "events")
    )


async def project(ctx: ServiceContext, tmp_path: Path) -> str:
    root = tmp_path / "app"
    root.mkdir(exist_ok=True)
    out = await project_add(ctx, params("project.add", {"commandId": "p1", "rootPath": str(root)}))
    return out.project.project_id


def proof_of(preview: Any) -> dict[str, str]:
    return {"inputDigest": preview.input_digest, "proof": preview.proof}


def create_body(project_id: str, command: str = "c1", **over: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "commandId": command,
        "name": "standup",
        "schedule": {"cron": "0 9 * * 1-5", "timezone": "Europe/Berlin"},
        "template": {"projectId": project_id, "prompt": "summarize yesterday"},
    }
    return {**body, **over}


async def create(ctx: ServiceContext, project_id: str, command: str = "c1", **over: Any) -> Any:
    body = create_body(project_id, command, **over)
    preview = await call(ctx, "routine.create.preview", body)
    return await call(ctx, "routine.create.confirm",
                      {**body, **proof_of(preview)})  # fmt: skip


async def test_create_previews_then_confirms_at_revision_1(
    rctx: ServiceContext, tmp_path: Path
) -> None:
    """The preview names the routine and 3 fires; the confirm inserts it at revision 1,
    active with nextFireAt; the proof is deleted; a replay is a duplicate."""
    project_id = await project(rctx, tmp_path)
    body = create_body(project_id)
    preview = await call(rctx, "routine.create.preview", body)
    assert preview.routine_id.startswith("routine_")
    assert len(preview.routine_id) == len("routine_") + 32
    assert [f.local for f in preview.next_fires] == [
        "2026-01-01T09:00:00+01:00", "2026-01-02T09:00:00+01:00", "2026-01-05T09:00:00+01:00",
    ]  # fmt: skip
    confirm = {**body, "inputDigest": preview.input_digest, "proof": preview.proof}
    made = await call(rctx, "routine.create.confirm", confirm)
    assert (made.delivery, made.routine.revision, made.routine.state) == ("new", 1, "active")
    assert made.routine.routine_id == preview.routine_id
    assert made.routine.next_fire_at == "2026-01-01T08:00:00.000Z"
    left = await rctx.read(lambda c: c.execute("SELECT count(*) FROM previews").fetchone()[0])
    assert left == 0
    again = await call(rctx, "routine.create.confirm", confirm)
    assert (again.delivery, again.receipt_id) == ("duplicate", made.receipt_id)
    receipt = await rctx.read(lambda c: c.execute(
        "SELECT actor_id, targets FROM receipts WHERE receipt_id = ?", (made.receipt_id,)
    ).fetchone())  # fmt: skip
    assert receipt[0] == "local-user"
    assert b'"targetType":"routine"' in receipt[1]


async def test_confirm_without_preview_expired_spent_or_other_values_is_refused(
    rctx: ServiceContext, tmp_path: Path, clock: FakeClock
) -> None:
    """No preview, another value, another proof, an expired proof: storage_conflict, and
    nothing changes; a refused confirm keeps its proof."""
    project_id = await project(rctx, tmp_path)
    body = create_body(project_id)
    preview = await call(rctx, "routine.create.preview", body)
    good = {**body, "inputDigest": preview.input_digest, "proof": preview.proof}
    for bad in (
        {**body, "inputDigest": preview.input_digest, "proof": "made-up"},
        {**good, "name": "other"},
        {**good, "paused": True},
        {**good, "schedule": {"cron": "0 10 * * 1-5", "timezone": "Europe/Berlin"}},
        {**good, "commandId": "c2"},
    ):
        assert (await refused(rctx, "routine.create.confirm", bad)).code == "storage_conflict"
    made = await call(rctx, "routine.create.confirm", good)  # the proof survived the refusals
    other = {**good, "commandId": "c3"}
    error = await refused(rctx, "routine.create.confirm", other)  # spent and deleted
    assert error.code == "storage_conflict"
    assert made.delivery == "new"
    late = await call(rctx, "routine.create.preview", create_body(project_id, "c4"))
    clock.advance(120_000)
    expired = {**create_body(project_id, "c4"), "inputDigest": late.input_digest,
               "proof": late.proof}  # fmt: skip
    assert (await refused(rctx, "routine.create.confirm", expired)).code == "storage_conflict"


@pytest.mark.parametrize(
    ("schedule", "code", "path"),
    [
        ({"cron": "*/5 * * * *", "timezone": "UTC"}, "routine_interval_too_short", None),
        ({"cron": "50 1,2 * * *", "timezone": "America/New_York"},
         "routine_interval_too_short", None),
        # Every minute of an hour on 29 Feb 2028, more than a year after START.
        ({"cron": "* 3 29 2 *", "timezone": "UTC"}, "routine_interval_too_short", None),
        ({"cron": "0 9 * *", "timezone": "UTC"}, "routine_schedule_invalid", "schedule.cron"),
        ({"cron": "0 9 * * *", "timezone": "Nowhere/Land"}, "routine_schedule_invalid",
         "schedule.timezone"),
    ],
)  # fmt: skip
async def test_bad_schedules_are_refused_at_preview_and_confirm(
    rctx: ServiceContext, tmp_path: Path, schedule: dict[str, str], code: str, path: str | None
) -> None:
    """The preview and the confirm both judge the schedule, and refuse without a trace."""
    project_id = await project(rctx, tmp_path)
    body = create_body(project_id, schedule=schedule)
    error = await refused(rctx, "routine.create.preview", body)
    assert error.code == code
    if path is not None:
        assert error.details["path"] == path
    digest = "sha256:" + "0" * 64
    error = await refused(rctx, "routine.create.confirm", {**body, "inputDigest": digest,
                                                           "proof": "x"})  # fmt: skip
    assert error.code == code


async def test_unknown_project_executor_and_the_limit_of_twenty(
    rctx: ServiceContext, tmp_path: Path
) -> None:
    """Unknown Project: resource_not_found; unknown executor: configuration_invalid; the
    21st live routine of a Project: routine_limit_reached (a disabled one frees a place)."""
    project_id = await project(rctx, tmp_path)
    body = create_body("project_" + "0" * 32)
    assert (await refused(rctx, "routine.create.preview", body)).code == "resource_not_found"
    body = create_body(project_id)
    body["template"] = {**body["template"], "executor": "user:nope"}
    assert (await refused(rctx, "routine.create.preview", body)).code == "configuration_invalid"
    made = [await create(rctx, project_id, f"k{i}", paused=i % 2 == 0) for i in range(20)]
    error = await refused(rctx, "routine.create.preview", create_body(project_id, "k20"))
    assert error.code == "routine_limit_reached"
    first = made[0].routine
    preview = await call(rctx, "routine.disable.preview", {
        "commandId": "d1", "routineId": first.routine_id, "expectedRevision": 1})  # fmt: skip
    await call(rctx, "routine.disable.confirm", {
        "commandId": "d1", "routineId": first.routine_id, "expectedRevision": 1,
        **proof_of(preview)})  # fmt: skip
    assert (await create(rctx, project_id, "k20")).delivery == "new"


async def test_pause_resume_and_disable_compare_and_set(
    rctx: ServiceContext, tmp_path: Path, clock: FakeClock
) -> None:
    """Pause drops nextFireAt, resume sets the first slot after now, a stale revision is
    storage_conflict; disable is final, previewed, and refuses a second preview."""
    project_id = await project(rctx, tmp_path)
    routine = (await create(rctx, project_id)).routine
    rid = {"routineId": routine.routine_id}
    error = await refused(rctx, "routine.pause", {"commandId": "x", **rid, "expectedRevision": 2})
    assert error.code == "storage_conflict"
    paused = await call(rctx, "routine.pause", {"commandId": "p", **rid, "expectedRevision": 1})
    assert (paused.routine.state, paused.routine.revision) == ("paused", 2)
    assert paused.routine.next_fire_at is None
    clock.advance(3 * 24 * 3600 * 1000)  # Saturday 2026-01-03T23:00Z: no replay
    resumed = await call(rctx, "routine.resume", {"commandId": "r", **rid, "expectedRevision": 2})
    assert resumed.routine.next_fire_at == "2026-01-05T08:00:00.000Z"
    change = {"commandId": "d", **rid, "expectedRevision": 3}
    preview = await call(rctx, "routine.disable.preview", change)
    assert preview.name == "standup"
    done = await call(rctx, "routine.disable.confirm",
                      {**change, **proof_of(preview)})  # fmt: skip
    assert (done.routine.state, done.routine.next_fire_at) == ("disabled", None)
    stale = [("routine.disable.preview", {**change, "commandId": "d2", "expectedRevision": 4}),
             ("routine.resume", {"commandId": "r2", **rid, "expectedRevision": 4})]  # fmt: skip
    for op, body in stale:
        assert (await refused(rctx, op, body)).code == "storage_conflict"


async def test_manual_run_records_a_launching_fire_and_is_busy_until_it_settles(
    rctx: ServiceContext, tmp_path: Path
) -> None:
    """run.confirm records a manual launching fire with scheduledAt now, receipt target
    routine_fire; its routine's next tick claims it; while it is unsettled a second run is
    routine_busy (retryable); a paused routine is routine_not_active. (No launcher is
    installed here, so the claimed fire stays launching: the busy state holds still.)"""
    await running_kind(rctx.runtime, ROUTINES)  # it opens on demand: open it to withhold
    rctx.runtime.extension(LauncherSlot).launcher = None
    project_id = await project(rctx, tmp_path)
    routine = (await create(rctx, project_id)).routine
    change = {"commandId": "run1", "routineId": routine.routine_id, "expectedRevision": 1}
    preview = await call(rctx, "routine.run.preview", change)
    ran = await call(rctx, "routine.run.confirm", {**change, **proof_of(preview)})
    assert (ran.fire.trigger_kind, ran.fire.state) == ("manual", "launching")
    assert ran.fire.scheduled_at == "2025-12-31T23:00:00.000Z"
    receipt = await rctx.read(
        lambda c: c.execute(
            "SELECT targets FROM receipts WHERE receipt_id = ?", (ran.receipt_id,)
        ).fetchone()
    )
    assert b'"targetType":"routine_fire"' in receipt[0]

    def claimed(conn: sqlite3.Connection) -> Any:
        return conn.execute("SELECT claimed_ms FROM routine_fires").fetchone()[0]

    with trio.fail_after(30):
        while await rctx.read(claimed) is None:  # noqa: ASYNC110 (storage, no event)
            await trio.sleep(0.05)
    shown = await call(rctx, "routine.show", {"routineId": routine.routine_id})
    assert [f.fire_id for f in shown.fires] == [ran.fire.fire_id]
    assert shown.routine.next_fire_at == routine.next_fire_at  # a run never moves it
    busy = await refused(rctx, "routine.run.preview", {**change, "commandId": "run2"})
    assert (busy.code, busy.retryable) == ("routine_busy", True)
    await call(rctx, "routine.pause", {"commandId": "p", "routineId": routine.routine_id,
                                       "expectedRevision": 1})  # fmt: skip
    error = await refused(rctx, "routine.run.preview",
                          {**change, "commandId": "run3", "expectedRevision": 2})  # fmt: skip
    assert error.code == "routine_not_active"
    stale = await refused(rctx, "routine.disable.preview",
                          {**change, "commandId": "d", "expectedRevision": 1})  # fmt: skip
    assert stale.code == "storage_conflict"  # another revision: no proof issued


async def test_show_and_list(rctx: ServiceContext, tmp_path: Path) -> None:
    """routine.show of an unknown routine is resource_not_found; list pages and filters."""
    project_id = await project(rctx, tmp_path)
    error = await refused(rctx, "routine.show", {"routineId": "routine_" + "0" * 32})
    assert error.code == "resource_not_found"
    for i in range(3):
        await create(rctx, project_id, f"l{i}", paused=i == 1)
    page = await call(rctx, "routine.list", {"limit": 2})
    assert len(page.routines) == 2
    rest = await call(rctx, "routine.list", {"limit": 2, "cursor": page.next_cursor})
    assert (len(rest.routines), rest.next_cursor) == (1, None)
    paused = await call(rctx, "routine.list", {"state": ["paused"]})
    assert [r.state for r in paused.routines] == ["paused"]


async def _admit_user(ctx: ServiceContext, document: dict[str, Any], command: str) -> None:
    """Write the user's config.jsonc and admit it (preview, then confirm)."""
    import json

    from maia.service import HANDLERS

    (ctx.home / "config.jsonc").write_text(json.dumps(document))
    preview = await HANDLERS["config.admit.preview"](ctx, params("config.admit.preview", {}))
    confirm = {"commandId": command, "previewId": preview.preview_id, "proof": preview.proof,
               "inputDigest": preview.input_digest, "manifestDigest": preview.manifest_digest,
               "expectedRevision": preview.expected_revision}  # fmt: skip
    await HANDLERS["config.admit.confirm"](ctx, params("config.admit.confirm", confirm))


async def test_the_confirm_checks_the_executor_as_admitted_now(
    rctx: ServiceContext, tmp_path: Path
) -> None:
    """An executor admitted after the Node started is usable at once; one an admission
    removed between the preview and the confirm is configuration_invalid at the confirm,
    which creates nothing."""
    project_id = await project(rctx, tmp_path)
    await _admit_user(rctx, {"executors": {"later": {"kind": "echo"}}}, "a1")
    body = create_body(project_id)
    body["template"] = {**body["template"], "executor": "user:later"}
    preview = await call(rctx, "routine.create.preview", body)
    await _admit_user(rctx, {}, "a2")
    error = await refused(rctx, "routine.create.confirm", {**body, **proof_of(preview)})
    assert error.code == "configuration_invalid"
    assert "user:later" in error.message


async def test_a_retried_create_previews_after_its_executor_was_removed(
    rctx: ServiceContext, tmp_path: Path
) -> None:
    """A create its commandId confirmed previews again after an admission removed its
    executor (it is not judged again) and its confirm answers the stored result, so
    `maia routine create --command-id C --yes` run twice exits 0; a new commandId with
    those values is configuration_invalid as before."""
    project_id = await project(rctx, tmp_path)
    await _admit_user(rctx, {"executors": {"later": {"kind": "echo"}}}, "a1")
    body = create_body(project_id)
    body["template"] = {**body["template"], "executor": "user:later"}
    made = await call(rctx, "routine.create.preview", body)
    first = await call(rctx, "routine.create.confirm", {**body, **proof_of(made)})
    await _admit_user(rctx, {}, "a2")
    again = await call(rctx, "routine.create.preview", body)
    assert (again.routine_id, again.input_digest) == (made.routine_id, made.input_digest)
    replayed = await call(rctx, "routine.create.confirm", {**body, **proof_of(again)})
    assert (replayed.delivery, replayed.receipt_id) == ("duplicate", first.receipt_id)
    other = await refused(rctx, "routine.create.preview", {**body, "commandId": "c2"})
    assert other.code == "configuration_invalid"


async def test_pause_and_resume_answer_a_reused_command_id_as_idempotency_conflict(
    rctx: ServiceContext, tmp_path: Path
) -> None:
    """pause and resume follow the spec's generic rule: a commandId reused with other input
    (another routine) is idempotency_conflict and changes nothing."""
    project_id = await project(rctx, tmp_path)
    one = (await create(rctx, project_id, "c1")).routine
    two = (await create(rctx, project_id, "c2")).routine
    await call(rctx, "routine.pause", {"commandId": "p", "routineId": one.routine_id,
                                       "expectedRevision": 1})  # fmt: skip
    for op in ("routine.pause", "routine.resume"):
        if op == "routine.resume":
            await call(rctx, op, {"commandId": "r", "routineId": one.routine_id,
                                  "expectedRevision": 2})  # fmt: skip
        reused = {"commandId": "p" if op == "routine.pause" else "r",
                  "routineId": two.routine_id, "expectedRevision": 1}  # fmt: skip
        assert (await refused(rctx, op, reused)).code == "idempotency_conflict"
