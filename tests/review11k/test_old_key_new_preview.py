"""`routine create|run --command-id C --yes` run again after an upgrade past registry 0.13.0:
the first confirm's receipt holds the old key form (the digest of inputDigest and proof), the
retry previews again and confirms with the new proof. The preview must issue a proof without
judging the routine again (the routine C made exists; the run's fire is unsettled), and the
confirm must answer duplicate with the stored receipt, as a disable already did. Both were
storage_conflict: the create preview's 'routine ... already exists', the run preview's
routine_busy or the confirm's 'command C was used with other values'. Other values under C
stay refused. Real storage, the real handlers."""

from __future__ import annotations

from pathlib import Path

import pytest

from maia.core import MaiaError
from maia.service import ServiceContext

from ..maia.service.test_routines import call, create, create_body, project, proof_of, refused
from ..review10k.test_confirm_replay_first import _to_the_old_key


async def test_a_create_stored_under_the_old_key_replays_after_a_new_preview(
    rctx: ServiceContext, tmp_path: Path
) -> None:
    project_id = await project(rctx, tmp_path)
    body = create_body(project_id, "old-create", paused=True)
    confirm = {**body, **proof_of(await call(rctx, "routine.create.preview", body))}
    first = await call(rctx, "routine.create.confirm", confirm)
    await rctx.store.write(_to_the_old_key(first.receipt_id, confirm))
    retried = {**body, **proof_of(await call(rctx, "routine.create.preview", body))}
    assert retried["proof"] != confirm["proof"]
    again = await call(rctx, "routine.create.confirm", retried)
    assert (again.delivery, again.receipt_id) == ("duplicate", first.receipt_id)
    assert again.routine == first.routine
    for other in ({**body, "name": "another"}, {**body, "paused": False},
                  {**body, "schedule": {"cron": "0 10 * * 1-5", "timezone": "Europe/Berlin"}},
                  {**body, "template": {**body["template"], "prompt": "another"}}):  # fmt: skip
        error = await refused(rctx, "routine.create.preview", other)
        assert error.code == "storage_conflict", other


async def test_a_run_stored_under_the_old_key_replays_after_a_new_preview(
    rctx: ServiceContext, tmp_path: Path
) -> None:
    project_id = await project(rctx, tmp_path)
    rid = (await create(rctx, project_id)).routine.routine_id
    change = {"commandId": "old-run", "routineId": rid, "expectedRevision": 1}
    confirm = {**change, **proof_of(await call(rctx, "routine.run.preview", change))}
    first = await call(rctx, "routine.run.confirm", confirm)
    await rctx.store.write(_to_the_old_key(first.receipt_id, confirm))
    retried = {**change, **proof_of(await call(rctx, "routine.run.preview", change))}
    assert retried["proof"] != confirm["proof"]
    again = await call(rctx, "routine.run.confirm", retried)
    assert (again.delivery, again.receipt_id) == ("duplicate", first.receipt_id)
    assert again.fire == first.fire
    await _paused_and_resumed(rctx, rid)  # revision 3: a run at 1 is not one at 3
    other_routine = (await create(rctx, project_id, "c2")).routine.routine_id
    # The scheduler runs beside the test (the fire may start, its turn settle): a refusal
    # is judged on the values alone, and no replay answers them.
    for other in ({**change, "routineId": other_routine}, {**change, "expectedRevision": 3}):
        with pytest.raises(MaiaError) as caught:
            await _preview_and_confirm(rctx, other)
        assert caught.value.code in ("storage_conflict", "routine_busy"), other
        if other["routineId"] == other_routine:
            assert caught.value.code == "storage_conflict"
    again = await call(rctx, "routine.run.confirm", retried)  # still the same values
    assert (again.delivery, again.receipt_id) == ("duplicate", first.receipt_id)


async def _preview_and_confirm(rctx: ServiceContext, change: dict[str, object]) -> None:
    preview = await call(rctx, "routine.run.preview", change)
    await call(rctx, "routine.run.confirm", {**change, **proof_of(preview)})


async def _paused_and_resumed(rctx: ServiceContext, routine_id: str) -> None:
    for revision, op in ((1, "routine.pause"), (2, "routine.resume")):
        await call(rctx, op, {"commandId": f"{op}-{revision}", "routineId": routine_id,
                              "expectedRevision": revision})  # fmt: skip
