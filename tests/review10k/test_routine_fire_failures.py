"""Fires that fail, on real storage with real echo workers and the real clock shifted:
routine.show carries the first turn's failure as turn.show does (its message was a canned
'worker failed'), and a fire whose Project folder is gone fails workspace_unavailable
(it was started, its turn failing worker_failed)."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path
from typing import Any

from maia.service import ServiceContext
from maia.service._turns import turn_show

from ..maia.service._helpers import params
from ..maia.service.test_routine_fires import call, make_routine, wait_for
from ..maia.service.test_routine_fires import fctx as fctx

FINISHED = ("completed", "failed", "interrupted")


async def run_once(ctx: ServiceContext, routine_id: str, command: str = "run1") -> None:
    change = {"commandId": command, "routineId": routine_id, "expectedRevision": 1}
    preview = await call(ctx, "routine.run.preview", change)
    await call(ctx, "routine.run.confirm", {**change, "inputDigest": preview.input_digest,
                                            "proof": preview.proof})  # fmt: skip


def settled(shown: Any) -> bool:
    return bool(shown.fires) and (shown.fires[0].state == "failed"
                                  or shown.fires[0].turn_state in FINISHED)  # fmt: skip


async def test_a_failed_first_turn_shows_its_failure_as_turn_show_does(
    fctx: ServiceContext, tmp_path: Path
) -> None:
    """The echo worker fails the turn ('/tool nope': no tool host): the fire carries the
    turn's failureReason and failure {code, message} with turn.show's own message."""
    routine_id = await make_routine(fctx, tmp_path, cron="0 0 1 1 *", prompt="/tool nope hi")
    await run_once(fctx, routine_id)
    (fire,) = (await wait_for(fctx, routine_id, settled)).fires
    turn = (await turn_show(fctx, params("turn.show", {"turnId": fire.turn_id}))).turn
    assert (fire.state, fire.turn_state, turn.state) == ("started", "failed", "failed")
    assert turn.failure_message is not None
    assert "tool nope failed" in turn.failure_message
    assert fire.failure_reason == turn.failure_reason
    assert fire.failure is not None
    assert (fire.failure.code, fire.failure.message) == (turn.failure_reason,
                                                         turn.failure_message)  # fmt: skip


async def test_a_fire_without_its_project_folder_is_workspace_unavailable(
    fctx: ServiceContext, tmp_path: Path
) -> None:
    """The Project's root is removed: the fire fails with reason workspace_unavailable and
    no Session is left running for it."""
    routine_id = await make_routine(fctx, tmp_path, cron="0 0 1 1 *")
    shutil.rmtree(tmp_path / "app")
    await run_once(fctx, routine_id)
    (fire,) = (await wait_for(fctx, routine_id, settled)).fires
    assert (fire.state, fire.reason, fire.turn_id) == ("failed", "workspace_unavailable", None)

    def live(conn: sqlite3.Connection) -> list[Any]:
        return conn.execute(
            "SELECT session_id FROM sessions WHERE state NOT IN ('stopped', 'failed')"
        ).fetchall()

    assert await fctx.read(live) == []
