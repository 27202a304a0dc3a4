"""project.add, project.list, project.show: the Project inventory.

Storage is the inventory's source of truth; after each change the Node rewrites the mirror
`$MAIA_HOME/projects.jsonc`. A root is canonicalized before it is compared, so two spellings
of one directory are one root, and a root already in the inventory is refused.
"""

from __future__ import annotations

import sqlite3
from typing import Any

import orjson
import trio

from maia.config import (
    InventoryEntry,
    Repository,
    canonical_root,
    default_project_key,
    write_inventory,
)
from maia.protocol import (
    MaiaError,
    Project,
    ProjectAddInput,
    ProjectListInput,
    ProjectListOutput,
    ProjectResult,
    ProjectShowInput,
    ProjectShowOutput,
    format_timestamp_ms,
    new_id,
    to_json,
)
from storage import Applied, MutationKey, ReceiptTarget, append_event, run_mutation

from ._context import ServiceContext, command_of, mutation_output, not_found
from ._page_bytes import fitting, project_bytes
from ._paging import issue, open_cursor

_COLUMNS = "project_id, project_key, root, name, revision, created_ms"


def _project(row: Any) -> Project:
    project_id, key, root, kind, revision, created = row
    return Project(
        project_id=project_id,
        project_key=key,
        root_path=root,
        workspace_kind=kind or "directory",
        revision=revision,
        created_at=format_timestamp_ms(created),
    )


async def project_add(ctx: ServiceContext, params: ProjectAddInput) -> ProjectResult:
    """Raises `configuration_invalid` for an unusable root, `invalid_state` for a root or key
    already in the inventory, `idempotency_conflict`."""
    root = await trio.to_thread.run_sync(canonical_root, params.root_path)
    command = command_of(params)
    now = ctx.now()

    def apply(conn: sqlite3.Connection) -> Applied:
        taken = conn.execute("SELECT project_id FROM projects WHERE root = ?", (root.path,))
        if (row := taken.fetchone()) is not None:
            raise MaiaError("invalid_state", f"{root.path} is already Project {row[0]}",
                            {"resource": "project", "id": row[0], "state": "added"})  # fmt: skip
        holders = dict(conn.execute("SELECT project_key, project_id FROM projects"))
        key = params.project_key or default_project_key(root.path, list(holders))
        if key in holders:  # the Project holding the key, in its state (in the inventory)
            raise MaiaError("invalid_state", f"the project key {key} is taken",
                            {"resource": "project", "id": holders[key], "state": "added",
                             "projectKey": key})  # fmt: skip
        repository = root.repository
        identity = repository.identity if repository is not None else None
        if identity is not None:
            same = conn.execute(
                "SELECT project_id FROM projects WHERE repository_identity = ?", (identity,)
            ).fetchone()
            if same is not None:
                raise MaiaError(
                    "invalid_state",
                    f"{root.path} is a checkout of {identity.replace(' ', ' at ')}, already "
                    f"Project {same[0]} (one Project per repository and ref)",
                    {"resource": "project", "id": same[0], "state": "added"},
                )
        project_id = new_id("project")
        # `name` holds the workspace kind: the inventory's field for it.
        conn.execute(
            "INSERT INTO projects (project_id, project_key, root, name, revision, created_ms,"
            " updated_ms, repository, repository_identity) VALUES (?, ?, ?, ?, 1, ?, ?, ?, ?)",
            (project_id, key, root.path, root.workspace_kind, now, now,
             orjson.dumps(repository.to_json()).decode() if repository else None, identity),
        )  # fmt: skip
        event = append_event(
            conn, owner_id=project_id, owner_type="project", event_type="project.added",
            payload={"projectKey": key, "rootPath": root.path}, now_ms=now, aggregate_revision=1,
            project_id=project_id, actor_id=command.actor_id,
        )  # fmt: skip
        project = _project((project_id, key, root.path, root.workspace_kind, 1, now))
        return Applied(
            {"project": to_json(project)},
            targets=(ReceiptTarget("project", project_id, "created", None, 1),),
            event_ids=(event.event_id,),
            project_id=project_id,
        )

    key = MutationKey(command.actor_id, "project.add", command.command_id)
    result = await ctx.store.write(
        lambda conn: run_mutation(
            conn, key=key, input_digest=command.digest, now_ms=now, apply=apply
        )
    )
    if result.delivery == "new":
        await mirror_projects(ctx)
    return mutation_output(ProjectResult, result)


async def mirror_projects(ctx: ServiceContext) -> None:
    """Rewrite `projects.jsonc` from storage (the mirror never decides anything)."""
    rows = await ctx.read(
        lambda c: c.execute(
            "SELECT project_id, project_key, root, name, repository FROM projects ORDER BY rowid"
        ).fetchall()
    )
    entries = [
        InventoryEntry(r[0], r[1], r[2], r[3] or "directory", _repository_of(r[4])) for r in rows
    ]
    await trio.to_thread.run_sync(write_inventory, ctx.projects_file, entries)


def _repository_of(text: str | None) -> Repository | None:
    """The stored repository block (JSON) as a Repository."""
    if text is None:
        return None
    wire = orjson.loads(text)
    return Repository(wire["normalizedRemote"], wire["objectFormat"], wire.get("expectedHead"))


async def project_list(ctx: ServiceContext, params: ProjectListInput) -> ProjectListOutput:
    """Raises `invalid_cursor`, `cursor_reset_required`."""
    after = 0
    if params.cursor is not None:
        after = open_cursor(ctx.store, params.cursor, "project.list", {})
    rows = await ctx.read(
        lambda c: c.execute(
            f"SELECT rowid, {_COLUMNS} FROM projects WHERE rowid > ? ORDER BY rowid LIMIT ?",
            (after, params.limit + 1),
        ).fetchall()
    )
    page = rows[: params.limit]
    projects = tuple(_project(r[1:]) for r in page)
    kept = fitting(projects, project_bytes)  # the rest would pass the 1 MiB frame
    cursor = None
    if len(rows) > params.limit or kept < len(page):
        projects, page = projects[:kept], page[:kept]
        cursor = issue(ctx.store, page[-1][0], "project.list", {})
    return ProjectListOutput(projects=projects, next_cursor=cursor)


async def project_show(ctx: ServiceContext, params: ProjectShowInput) -> ProjectShowOutput:
    """Raises `resource_not_found`."""
    row = await ctx.read(
        lambda c: c.execute(
            f"SELECT {_COLUMNS} FROM projects WHERE project_id = ?", (params.project_id,)
        ).fetchone()
    )
    if row is None:
        raise not_found("project", params.project_id)
    return ProjectShowOutput(project=_project(row))
