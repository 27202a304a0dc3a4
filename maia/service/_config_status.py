"""config.show and what the rest of the Node reads of the admitted configuration.

`effective_config(ctx, project_id)` is the admitted configuration work in a Project runs on
(the Session side takes its limits and executors from it); `config_files_status(ctx)` lists
the files that are not what is admitted (node.status reports them). Both read storage; the
status also reads each file (descriptor-first, off the trio thread) to compare it.
"""

from __future__ import annotations

import sqlite3
from typing import Any

import trio

from maia.config import (
    UNREADABLE_SNAPSHOT,
    Candidate,
    EffectiveConfig,
    UserConfig,
    project_candidate,
    user_candidate,
)
from maia.protocol import (
    ConfigScopeInput,
    ConfigScopeStatus,
    ConfigShowOutput,
    check,
    format_timestamp_ms,
)
from storage import USER_SCOPE, ConfigSnapshot, Storage, scope_revision

from ._admitted import read_snapshot, readable_user_config, snapshot_problem
from ._context import ServiceContext, not_found

MAX_STATUS_PROJECTS = 256


async def _project_row(ctx: ServiceContext, project_id: str) -> tuple[str, str]:
    row = await ctx.read(
        lambda c: c.execute(
            "SELECT root, project_key FROM projects WHERE project_id = ?", (project_id,)
        ).fetchone()
    )
    if row is None:
        raise not_found("project", project_id)
    return str(row[0]), str(row[1])


async def _candidate(ctx: ServiceContext, project_id: str | None) -> Candidate:
    if project_id is None:
        return await trio.to_thread.run_sync(user_candidate, str(ctx.home))
    root, key = await _project_row(ctx, project_id)
    user = (await effective_config(ctx, None)).user  # the admitted one, that work runs on
    return await trio.to_thread.run_sync(
        project_candidate, root, project_id, key, user.capacity.currency, user.executor_refs()
    )


def _scope(project_id: str | None) -> str:
    return USER_SCOPE if project_id is None else project_id


def _document(snapshot: ConfigSnapshot | None) -> Any:
    manifest = None if snapshot is None else snapshot.manifest
    return manifest.get("document") if isinstance(manifest, dict) else None


async def admitted_user_config(store: Storage) -> UserConfig | None:
    """The admitted user configuration, or None when the user scope was never admitted.

    For `open_services`: a Node that starts should run on this, not on the file (editing the
    file changes nothing until it is admitted); only a home never admitted starts from the
    file; so does one whose snapshot this Maia refuses (`readable_user_config`).
    """
    snapshot = await store.read(lambda conn: read_snapshot(conn, USER_SCOPE))
    return None if snapshot is None else readable_user_config(snapshot)


async def effective_config(ctx: ServiceContext, project_id: str | None) -> EffectiveConfig:
    """The admitted configuration work in `project_id` (None: outside a Project) runs on:
    limits narrowed, executors resolvable. Raises `resource_not_found` for an unknown
    Project. Reads storage only, never a file (`AdmittedConfigs`: in memory between
    admissions)."""

    return await ctx.admitted.of(project_id)


async def _status(ctx: ServiceContext, project_id: str | None) -> tuple[ConfigScopeStatus, bool]:
    """The scope's status, and whether its file is absent."""
    candidate = await _candidate(ctx, project_id)
    scope = _scope(project_id)

    def read(conn: sqlite3.Connection) -> tuple[ConfigSnapshot | None, int, str | None]:
        snapshot = read_snapshot(conn, scope)
        return snapshot, scope_revision(conn, scope), snapshot_problem(snapshot, project_id)

    snapshot, revision, unreadable = await ctx.read(read)
    absent = candidate.manifest is not None and candidate.manifest["source"]["digest"] == "absent"
    problems = [p.to_json() for p in candidate.problems[:99]]  # room for the snapshot's
    if candidate.problems:
        state = "invalid"
    elif snapshot is None:
        state = "never-admitted"
    elif unreadable is not None:
        state = "differs"  # what is in effect is not what is admitted: admitting mends it
    else:
        state = "admitted" if snapshot.manifest_digest == candidate.digest else "differs"
    if snapshot is not None and unreadable is not None:
        problems.append(_unreadable_problem(ctx, snapshot, project_id, candidate, unreadable))
    wire: dict[str, Any] = {
        "scope": "user" if project_id is None else "project",
        "source": candidate.source,
        "file": state,
        "revision": revision,
        "problems": problems,
    }
    if project_id is not None:
        wire["projectId"] = project_id
    if snapshot is not None:
        wire["snapshotId"] = snapshot.snapshot_id
        wire["manifestDigest"] = snapshot.manifest_digest
        wire["admittedAt"] = format_timestamp_ms(snapshot.admitted_ms)
    return check(ConfigScopeStatus, wire, root="result"), absent


def _unreadable_problem(ctx: ServiceContext, snapshot: ConfigSnapshot, project_id: str | None,
                        candidate: Candidate, why: str) -> dict[str, Any]:  # fmt: skip
    """The problem that says the admitted snapshot cannot be read, what runs instead, and
    the admission that mends it."""
    if project_id is None:
        instead, admit = "the Node runs on config.jsonc", "maia config admit"
    else:
        instead = "the Project runs on its file (or defaults, if the file has problems)"
        admit = f"maia config admit --project-id {project_id}"
    detail = (f"the admitted snapshot {snapshot.snapshot_id} (revision {snapshot.revision}) "
              f"{UNREADABLE_SNAPSHOT}; {instead} until it is admitted again ({admit}): "
              f"{why[:600]}")  # fmt: skip
    return {"source": str(ctx.home / "maia.db"), "path": "$", "detail": detail[:1024]}


async def _config_show(ctx: ServiceContext, params: ConfigScopeInput) -> ConfigShowOutput:
    """Raises `resource_not_found`."""
    effective = await effective_config(ctx, params.project_id)
    user, _ = await _status(ctx, None)
    project = (await _status(ctx, params.project_id))[0] if params.project_id else None
    return ConfigShowOutput(user=user, effective=effective.view(), project=project)


async def config_files_status(ctx: ServiceContext) -> list[ConfigScopeStatus]:
    """Every configuration file that is not what is admitted: one that differs (edited
    since), is invalid, or exists and was never admitted. The user's first, then Projects
    in the order they were added (at most MAX_STATUS_PROJECTS are read). For node.status:
    such a file is not in effect until it is admitted."""
    rows = await ctx.read(
        lambda c: c.execute(
            "SELECT project_id FROM projects ORDER BY rowid LIMIT ?", (MAX_STATUS_PROJECTS,)
        ).fetchall()
    )
    found = [await _status(ctx, None)]
    found += [await _status(ctx, str(r[0])) for r in rows]
    return [
        s
        for s, absent in found
        if s.file != "admitted" and not (absent and s.file == "never-admitted")
    ]
