"""project.relocate on real storage and real directories: a moved Project previewed and
confirmed (root, repository block, revision, event, receipt, mirror); refusals for a root
that changed since the preview, a stale preview, a taken root and live Sessions."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from maia.protocol import MaiaError
from maia.service import ServiceContext
from storage import read_owner_events

from .test_admission import add_project, admit, call, write_project

KEYS = ("previewId", "proof", "inputDigest", "expectedRevision")


def _git(root: Path, branch: str = "main") -> None:
    os.makedirs(root / ".git", 0o700, exist_ok=True)
    (root / ".git" / "config").write_text('[remote "origin"]\n\turl = https://h.org/o/app.git\n')
    (root / ".git" / "HEAD").write_text(f"ref: refs/heads/{branch}\n")


async def _preview(ctx: ServiceContext, project_id: str, root: Path) -> dict[str, Any]:
    return await call(ctx, "project.relocate.preview",
                      {"projectId": project_id, "rootPath": str(root)})  # fmt: skip


async def _confirm(ctx: ServiceContext, preview: dict[str, Any], root: Path,
                   command: str) -> dict[str, Any]:  # fmt: skip
    body = {**{k: preview[k] for k in KEYS}, "projectId": preview["projectId"],
            "rootPath": str(root), "commandId": command}  # fmt: skip
    return await call(ctx, "project.relocate.confirm", body)


async def test_a_moved_repository_is_relocated(ctx: ServiceContext, work: Path) -> None:
    """Moving the folder and relocating: the preview shows both roots and repositories; the
    confirm moves the Project (revision 2), records project.relocated and rewrites the mirror."""
    project_id = await add_project(ctx, work / "old")
    _git(work / "old")
    os.rename(work / "old", work / "new")
    preview = await _preview(ctx, project_id, work / "new")
    assert (preview["fromRoot"], preview["toRoot"]) == (str(work / "old"), str(work / "new"))
    assert preview["repositoryAfter"]["normalizedRemote"] == "h.org/o/app"
    assert "repositoryBefore" not in preview  # added before it was a repository
    done = await _confirm(ctx, preview, work / "new", "move")
    assert done["project"]["rootPath"] == str(work / "new")
    assert done["project"]["revision"] == 2
    assert done["project"]["workspaceKind"] == "repository"
    events = await ctx.read(lambda c: read_owner_events(c, project_id))
    assert [e.event_type for e in events] == ["project.added", "project.relocated"]
    assert str(work / "new") in (ctx.home / "projects.jsonc").read_text()


async def test_root_changed_since_the_preview_is_refused(ctx: ServiceContext, work: Path) -> None:
    """A checkout that moved to another branch between preview and confirm is refused."""
    project_id = await add_project(ctx, work / "old")
    os.mkdir(work / "new", 0o700)
    _git(work / "new")
    preview = await _preview(ctx, project_id, work / "new")
    _git(work / "new", "other")
    with pytest.raises(MaiaError) as caught:
        await _confirm(ctx, preview, work / "new", "move")
    assert caught.value.code == "preview_mismatch"
    shown = await call(ctx, "project.show", {"projectId": project_id})
    assert shown["project"]["rootPath"] == str(work / "old")


async def test_stale_relocation_preview_is_refused(ctx: ServiceContext, work: Path) -> None:
    """An admission that moved the Project's revision makes the relocation preview stale."""
    project_id = await add_project(ctx, work / "old")
    os.mkdir(work / "new", 0o700)
    preview = await _preview(ctx, project_id, work / "new")
    write_project(work / "old", '{"schemaVersion": "maia.project-config.v1", "projectKey": "app"}')
    await admit(ctx, {"projectId": project_id}, "admit")
    with pytest.raises(MaiaError) as caught:
        await _confirm(ctx, preview, work / "new", "move")
    assert caught.value.code == "revision_conflict"


async def test_taken_root_and_live_sessions_are_refused(ctx: ServiceContext, work: Path) -> None:
    """Another Project's root, or a Project with a Session not archived: invalid_state."""
    project_id = await add_project(ctx, work / "old")
    await add_project(ctx, work / "other", "other")
    with pytest.raises(MaiaError) as taken:
        await _preview(ctx, project_id, work / "other")
    assert taken.value.code == "invalid_state"
    await call(ctx, "session.create", {"commandId": "s", "projectId": project_id})
    os.mkdir(work / "new", 0o700)
    with pytest.raises(MaiaError) as busy:
        await _preview(ctx, project_id, work / "new")
    assert busy.value.code == "invalid_state"
    assert "not archived" in busy.value.message
