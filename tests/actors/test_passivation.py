"""Idle Session actors passivate and reload from storage on their next message (a real
SQLite file, the Node's handlers in-process, real echo worker processes)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import trio

from maia.config import UserConfig
from maia.protocol import REGISTRY, SystemClock, decode_input
from maia.service import ServiceContext, open_services
from maia.service._projects import project_add
from maia.service._sessions import session_create
from maia.service._turns import turn_send
from storage import open_storage


def _params(op_id: str, body: dict[str, Any]) -> Any:
    descriptor = REGISTRY.get(op_id)
    assert descriptor is not None
    return decode_input(descriptor, body)


async def _session(ctx: ServiceContext, root: Path) -> str:
    project = await project_add(ctx, _params("project.add", {"commandId": "c-p",
                                                             "rootPath": str(root)}))  # fmt: skip
    created = await session_create(ctx, _params("session.create", {
        "commandId": "c-s", "projectId": project.project.project_id}))  # fmt: skip
    return str(created.session.session_id)


async def _turn(ctx: ServiceContext, session_id: str, command_id: str) -> Any:
    body = {"commandId": command_id, "sessionId": session_id, "text": "hi",
            "waitMilliseconds": 4000}  # fmt: skip
    return (await turn_send(ctx, _params("turn.send", body))).turn


async def test_an_idle_session_passivates_and_its_next_turn_reloads_it(tmp_path: Path) -> None:
    """A Session with no live effect is passivated by the idle sweep; a turn sent to it then
    rehydrates it from storage (a new incarnation) and completes, while a Session holding
    its warm worker (a live effect) is not passivated however idle."""
    root = tmp_path / "project"
    root.mkdir()
    with trio.fail_after(60):
        async with (
            open_storage(tmp_path / "maia.db", clock=SystemClock()) as store,
            open_services(store, clock=SystemClock(), home=tmp_path, config=UserConfig()) as ctx,
        ):
            registry = ctx.sessions.registry
            session_id = await _session(ctx, root)
            assert registry.is_live(session_id)
            assert registry.passivate_idle(older_than_s=0.0) == 1
            await trio.sleep(0.1)  # its task drains and stops
            assert not registry.is_live(session_id)
            spawned = registry.statistics().spawned
            turn = await _turn(ctx, session_id, "c-t1")
            assert (turn.state, turn.output_text) == ("completed", "hi")
            assert registry.is_live(session_id)
            assert registry.statistics().spawned == spawned + 1
            assert registry.passivate_idle(older_than_s=0.0) == 0  # its worker vetoes it
            again = await _turn(ctx, session_id, "c-t2")
            assert (again.state, again.session_id) == ("completed", session_id)
            assert again.turn_id != turn.turn_id
            assert registry.statistics().passivated_idle == 1
