"""A routine whose template names an executor the configuration does not define is refused
with `configuration_invalid` naming the field (`details.path == "template.executor"`), as
the other refusals of a routine create name theirs (`schedule.cron`, `schedule.timezone`).
The config layer's error names the executor and the known ones; the service adds the
field. Nothing is created."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from maia.core import MaiaError, SystemClock
from maia.protocol import REGISTRY, decode_input
from maia.service import open_services
from storage import open_storage


def _params(op_id: str, body: dict[str, Any]) -> Any:
    descriptor = REGISTRY.get(op_id)
    assert descriptor is not None
    return decode_input(descriptor, body)


@asynccontextmanager
async def _services_with_project(tmp_path: Path) -> AsyncIterator[tuple[Any, str]]:
    """The services on a fresh home and storage, with one project; its id."""
    from maia.service._projects import project_add

    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    (tmp_path / "app").mkdir()
    clock = SystemClock()
    async with (
        open_storage(home / "maia.db", clock=clock, synchronous="NORMAL") as store,
        open_services(store, clock=clock, home=home) as ctx,
    ):
        project = await project_add(ctx, _params("project.add", {
            "commandId": "p", "rootPath": str(tmp_path / "app")}))  # fmt: skip
        yield ctx, project.project.project_id


async def test_an_unknown_executor_names_template_executor(tmp_path: Path) -> None:
    """The refusal names template.executor; no routine exists after it."""
    from maia.service._routines import ROUTINE_HANDLERS

    async with _services_with_project(tmp_path) as (ctx, project_id):
        body = {"commandId": "c1", "name": "r",
                "schedule": {"cron": "0 9 * * *", "timezone": "UTC"},
                "template": {"projectId": project_id, "prompt": "hi",
                             "executor": "user:nope"}}  # fmt: skip
        with pytest.raises(MaiaError) as refused:
            await ROUTINE_HANDLERS["routine.create.preview"](
                ctx, _params("routine.create.preview", body)
            )
        listed = await ROUTINE_HANDLERS["routine.list"](ctx, _params("routine.list", {}))
        assert listed.routines == ()
        assert refused.value.code == "configuration_invalid"
        assert refused.value.details.get("path") == "template.executor"


async def test_session_create_names_its_executor_field(tmp_path: Path) -> None:
    """session.create with an unknown executor is configuration_invalid naming `executor`."""
    from maia.service._sessions import session_create

    async with _services_with_project(tmp_path) as (ctx, project_id):
        body = {"commandId": "s1", "projectId": project_id,
                "executor": "user:nope"}  # fmt: skip
        with pytest.raises(MaiaError) as refused:
            await session_create(ctx, _params("session.create", body))
        assert refused.value.code == "configuration_invalid"
        assert refused.value.details.get("path") == "executor"
        assert refused.value.details.get("executor") == "user:nope"
