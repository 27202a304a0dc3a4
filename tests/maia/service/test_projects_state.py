"""A Project refusal's `details.state` is the Project's own state (`added`: it is in the
inventory), never a phrase: project.add of a taken key said "taken" (and named the key as
the ID), project.relocate of a Project to its own root "there", of one with live Sessions
"has_sessions". The ID is the Project's; what made the refusal rides beside it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from maia.protocol import MaiaError
from maia.service import ServiceContext
from tests.maia.config.test_admission import add_project, call


async def test_a_taken_project_key_names_the_project_holding_it(
    ctx: ServiceContext, tmp_path: Path
) -> None:
    holder = await add_project(ctx, tmp_path / "one", "app")
    os.mkdir(tmp_path / "two", 0o700)
    body = {"commandId": "add-two", "rootPath": str(tmp_path / "two"), "projectKey": "app"}
    with pytest.raises(MaiaError) as caught:
        await call(ctx, "project.add", body)
    assert caught.value.code == "invalid_state"
    assert caught.value.message == "the project key app is taken"
    assert caught.value.details == {
        "resource": "project", "id": holder, "state": "added", "projectKey": "app"}  # fmt: skip


async def test_relocate_refusals_name_the_projects_state(
    ctx: ServiceContext, tmp_path: Path
) -> None:
    project_id = await add_project(ctx, tmp_path / "old")
    preview = {"projectId": project_id, "rootPath": str(tmp_path / "old")}
    with pytest.raises(MaiaError) as there:
        await call(ctx, "project.relocate.preview", preview)
    assert there.value.code == "invalid_state"
    assert there.value.message.startswith(f"project {project_id} is already at ")
    assert there.value.details == {"resource": "project", "id": project_id, "state": "added",
                                   "rootPath": str((tmp_path / "old").resolve())}  # fmt: skip
    await call(ctx, "session.create", {"commandId": "s", "projectId": project_id})
    os.mkdir(tmp_path / "new", 0o700)
    with pytest.raises(MaiaError) as busy:
        await call(ctx, "project.relocate.preview", {**preview, "rootPath": str(tmp_path / "new")})
    assert busy.value.code == "invalid_state"
    assert "not archived" in busy.value.message
    assert busy.value.details == {
        "resource": "project", "id": project_id, "state": "added", "sessions": 1}  # fmt: skip
