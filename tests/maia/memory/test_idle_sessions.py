"""Sessions created and never used leave nothing live in the Node (a real SQLite file, the
Node's handlers in-process): no actor in the registry, no actor object in memory."""

from __future__ import annotations

import gc
from pathlib import Path
from typing import Any

import trio
import trio.testing

from actors import Actor
from actors.session import SessionActor, UnbornSession
from maia.config import UserConfig
from maia.protocol import REGISTRY, SystemClock, decode_input
from maia.service import open_services
from maia.service._projects import project_add
from maia.service._sessions import session_create, session_show
from storage import open_storage

SESSIONS = 20


def _params(op_id: str, body: dict[str, Any]) -> Any:
    descriptor = REGISTRY.get(op_id)
    assert descriptor is not None
    return decode_input(descriptor, body)


def _alive(kind: type) -> int:
    return sum(1 for thing in gc.get_objects() if type(thing) is kind)


def _session_actors() -> int:
    """`Actor` objects of the Session kind alive (other kinds' actors come and go)."""
    return sum(1 for thing in gc.get_objects()
               if type(thing) is Actor and thing.name.startswith("session/"))  # fmt: skip


async def test_created_sessions_leave_no_actor_behind(tmp_path: Path) -> None:
    """20 Sessions created (the collector off) leave no live actor in the registry and no
    `Actor`, `UnbornSession` or `SessionActor` object alive; each is stored and readable
    (tests/actors/test_passivation.py: the next turn rehydrates one)."""
    root = tmp_path / "project"
    root.mkdir()
    with trio.fail_after(60):
        async with (
            open_storage(tmp_path / "maia.db", clock=SystemClock()) as store,
            open_services(store, clock=SystemClock(), home=tmp_path, config=UserConfig()) as ctx,
        ):
            project = await project_add(ctx, _params("project.add", {
                "commandId": "c-p", "rootPath": str(root)}))  # fmt: skip
            registry = ctx.sessions.registry
            live_before = registry.statistics().live  # other kinds' actors are not counted
            gc.collect()
            gc.disable()
            try:
                created = [
                    await session_create(ctx, _params("session.create", {
                        "commandId": f"c-s{i}", "projectId": project.project.project_id}))
                    for i in range(SESSIONS)
                ]  # fmt: skip
                await trio.testing.wait_all_tasks_blocked()
                assert registry.statistics().live == live_before == 0
                assert registry.statistics().passivated_idle == SESSIONS
                assert _alive(UnbornSession) == _alive(SessionActor) == 0
                assert _session_actors() == 0
            finally:
                gc.enable()
            first = created[0].session.session_id
            shown = await session_show(ctx, _params("session.show", {"sessionId": first}))
            assert shown.session.session_id == first
