"""Sessions created and never used hold at most a bounded number of actors in the Node (a
real SQLite file, the Node's handlers in-process): the most recent ones stay live, small, and
the older ones leave nothing behind."""

from __future__ import annotations

import gc
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import trio
import trio.testing

from actors import Actor
from actors.session import RECENT_CREATIONS_LIVE, SessionActor, UnbornSession
from maia.config import UserConfig
from maia.protocol import REGISTRY, SystemClock, decode_input
from maia.service import open_services
from maia.service._projects import project_add
from maia.service._sessions import session_create, session_rename, session_show
from storage import open_storage

OLDER = 16  # created before the most recent RECENT_CREATIONS_LIVE


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


@asynccontextmanager
async def _services_with_project(tmp_path: Path) -> AsyncIterator[tuple[Any, str]]:
    """The Node's handlers on a real SQLite file, with one Project added: (context, its ID)."""
    root = tmp_path / "project"
    root.mkdir()
    async with (
        open_storage(tmp_path / "maia.db", clock=SystemClock()) as store,
        open_services(store, clock=SystemClock(), home=tmp_path, config=UserConfig()) as ctx,
    ):
        project = await project_add(ctx, _params("project.add", {
            "commandId": "c-p", "rootPath": str(root)}))  # fmt: skip
        yield ctx, project.project.project_id


async def test_a_burst_of_creations_keeps_only_the_recent_actors(tmp_path: Path) -> None:
    """24 Sessions created one after another (the collector off): the 8 most recent keep a
    live actor, each an `UnbornSession` (a Session actor is built at a Session's first
    message, none for these); the 16 older ones were passivated and no object of theirs is
    left; all 24 are stored and readable (tests/actors/test_passivation.py: a turn
    rehydrates a passivated one)."""
    with trio.fail_after(60):
        async with _services_with_project(tmp_path) as (ctx, project_id):
            registry = ctx.sessions.registry
            gc.collect()
            gc.disable()
            try:
                created = [
                    (await session_create(ctx, _params("session.create", {
                        "commandId": f"c-s{i}", "projectId": project_id,
                    }))).session.session_id
                    for i in range(RECENT_CREATIONS_LIVE + OLDER)
                ]  # fmt: skip
                await trio.testing.wait_all_tasks_blocked()
                assert registry.statistics().live == RECENT_CREATIONS_LIVE
                assert registry.statistics().passivated_idle == OLDER
                assert not any(registry.is_live(i) for i in created[:OLDER])
                assert all(registry.is_live(i) for i in created[OLDER:])
                assert _alive(UnbornSession) == _session_actors() == RECENT_CREATIONS_LIVE
                assert _alive(SessionActor) == 0
            finally:
                gc.enable()
            for session_id in (created[0], created[-1]):
                shown = await session_show(ctx, _params("session.show", {"sessionId": session_id}))
                assert shown.session.session_id == session_id


async def test_a_session_in_use_is_not_passivated_early(tmp_path: Path) -> None:
    """A Session created and then sent a message (a rename: its actor is built) is no
    longer among the recent creations: 8 creations after it leave its actor live."""
    with trio.fail_after(60):
        async with _services_with_project(tmp_path) as (ctx, project_id):

            async def create(n: int) -> str:
                created = await session_create(ctx, _params("session.create", {
                    "commandId": f"c-s{n}", "projectId": project_id}))  # fmt: skip
                return str(created.session.session_id)

            used, unused = await create(0), await create(1)
            await session_rename(ctx, _params("session.rename", {
                "commandId": "c-r", "sessionId": used, "title": "in use"}))  # fmt: skip
            for n in range(2, 2 + RECENT_CREATIONS_LIVE):
                await create(n)
            registry = ctx.sessions.registry
            assert registry.is_live(used)
            assert not registry.is_live(unused)
