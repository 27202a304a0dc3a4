"""turn.interrupt of a turn that has ended is `invalid_state` naming the state the turn
ended in (`details.state`: completed, failed or interrupted), a turn state, not "ended"
(real storage, a real home and real echo workers)."""

from __future__ import annotations

from pathlib import Path

import pytest

from maia.protocol import MaiaError
from maia.service import ServiceContext
from maia.service._projects import project_add
from maia.service._sessions import session_create
from maia.service._turns import turn_interrupt, turn_send, turn_wait

from ._helpers import params


async def _refused_state(ctx: ServiceContext, command_id: str, turn_id: str) -> object:
    with pytest.raises(MaiaError) as caught:
        await turn_interrupt(
            ctx, params("turn.interrupt", {"commandId": command_id, "turnId": turn_id})
        )
    assert caught.value.code == "invalid_state"
    assert caught.value.details.get("id") == turn_id
    return caught.value.details.get("state")


async def test_an_ended_turns_interrupt_names_its_end_state(
    ctx: ServiceContext, tmp_path: Path
) -> None:
    """Completed, failed (rejected while queued) and interrupted turns each name their state."""
    (tmp_path / "app").mkdir()
    project = await project_add(
        ctx, params("project.add", {"commandId": "p", "rootPath": str(tmp_path / "app")})
    )
    created = await session_create(ctx, params("session.create", {
        "commandId": "s", "projectId": project.project.project_id}))  # fmt: skip
    session_id = created.session.session_id
    done = await turn_send(
        ctx, params("turn.send", {"commandId": "w", "sessionId": session_id, "text": "hi"})
    )
    await turn_wait(ctx, params("turn.wait", {"turnId": done.turn.turn_id}))
    slow = await turn_send(ctx, params("turn.send", {
        "commandId": "a", "sessionId": session_id, "text": "/sleep 60000 never"}))  # fmt: skip
    queued = await turn_send(
        ctx, params("turn.send", {"commandId": "b", "sessionId": session_id, "text": "later"})
    )
    rejected = await turn_interrupt(
        ctx, params("turn.interrupt", {"commandId": "i1", "turnId": queued.turn.turn_id})
    )
    assert rejected.turn.state == "failed"
    await turn_interrupt(
        ctx, params("turn.interrupt", {"commandId": "i2", "turnId": slow.turn.turn_id})
    )
    ended = await turn_wait(ctx, params("turn.wait", {"turnId": slow.turn.turn_id}))
    assert ended.turn.state == "interrupted"
    assert await _refused_state(ctx, "x1", done.turn.turn_id) == "completed"
    assert await _refused_state(ctx, "x2", queued.turn.turn_id) == "failed"
    assert await _refused_state(ctx, "x3", slow.turn.turn_id) == "interrupted"
