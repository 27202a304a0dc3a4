"""A retried routine confirm (same commandId, same values) replays its stored receipt before
anything is judged again, and so does one whose receipt was stored under the key routine
confirms had before registry 0.13.0 (the digest of inputDigest and proof)."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from maia.core import digest_json
from maia.service import ServiceContext

from ..maia.service.test_routines import call, create, create_body, project, proof_of, refused


async def test_a_retried_create_at_the_limit_replays(rctx: ServiceContext, tmp_path: Path) -> None:
    """The confirm that made a Project's 20th routine, sent again, answers duplicate with its
    receipt (it was routine_limit_reached: the limit was judged before the replay)."""
    project_id = await project(rctx, tmp_path)
    for i in range(19):
        await create(rctx, project_id, f"k{i}")
    body = create_body(project_id, "twentieth")
    confirm = {**body, **proof_of(await call(rctx, "routine.create.preview", body))}
    made = await call(rctx, "routine.create.confirm", confirm)
    again = await call(rctx, "routine.create.confirm", confirm)
    assert (made.delivery, again.delivery) == ("new", "duplicate")
    assert (again.receipt_id, again.routine) == (made.receipt_id, made.routine)


def _to_the_old_key(receipt_id: str, confirm: dict[str, Any]) -> Any:
    """Rewrite a receipt's stored input digest to the pre-0.13.0 form of routine confirms."""
    old = digest_json({"inputDigest": confirm["inputDigest"], "proof": confirm["proof"]})

    def rewrite(conn: sqlite3.Connection) -> None:
        conn.execute("UPDATE receipts SET input_digest = ? WHERE receipt_id = ?",
                     (old, receipt_id))  # fmt: skip

    return rewrite


async def test_confirms_stored_under_the_old_key_replay(
    rctx: ServiceContext, tmp_path: Path
) -> None:
    """create, run and disable confirms whose receipts hold the old key form, retried with
    the same values and proof, answer duplicate with the stored receipt (they were
    storage_conflict: 'command ... was used with other values')."""
    project_id = await project(rctx, tmp_path)
    body = create_body(project_id, "old-create")
    create_confirm = {**body, **proof_of(await call(rctx, "routine.create.preview", body))}
    made = await call(rctx, "routine.create.confirm", create_confirm)
    rid = made.routine.routine_id
    done = [(made, "routine.create.confirm", create_confirm)]
    for op, command in (("routine.run", "old-run"), ("routine.disable", "old-disable")):
        change = {"commandId": command, "routineId": rid, "expectedRevision": 1}
        confirm = {**change, **proof_of(await call(rctx, f"{op}.preview", change))}
        done.append((await call(rctx, f"{op}.confirm", confirm), f"{op}.confirm", confirm))
    for first, _, confirm in done:
        await rctx.store.write(_to_the_old_key(first.receipt_id, confirm))
    for first, op, confirm in done:
        again = await call(rctx, op, confirm)
        assert (again.delivery, again.receipt_id) == ("duplicate", first.receipt_id), op


async def test_a_disable_stored_under_the_old_key_replays_after_a_new_preview(
    rctx: ServiceContext, tmp_path: Path
) -> None:
    """`routine disable --command-id C --yes` run again after an upgrade: the preview of a
    disable whose receipt holds the old key issues a proof (the receipt names the routine
    and the revision, all the digest binds), and the confirm with that new proof answers
    duplicate with the stored receipt (both were storage_conflict)."""
    project_id = await project(rctx, tmp_path)
    rid = (await create(rctx, project_id)).routine.routine_id
    change = {"commandId": "old-disable", "routineId": rid, "expectedRevision": 1}
    confirm = {**change, **proof_of(await call(rctx, "routine.disable.preview", change))}
    first = await call(rctx, "routine.disable.confirm", confirm)
    await rctx.store.write(_to_the_old_key(first.receipt_id, confirm))
    retried = {**change, **proof_of(await call(rctx, "routine.disable.preview", change))}
    assert retried["proof"] != confirm["proof"]
    again = await call(rctx, "routine.disable.confirm", retried)
    assert (again.delivery, again.receipt_id) == ("duplicate", first.receipt_id)
    other = {**change, "expectedRevision": 2}  # other values under C: still refused
    error = await refused(rctx, "routine.disable.preview", other)
    assert error.code == "storage_conflict"
