"""project.relocate.preview and .confirm: a Project moved or recloned to another root.

The new root is checked as project.add checks one (descriptor-first, owner and mode, its
repository block read from its own files). Refused: a root or a repository identity another
Project holds, the Project's own current root, and a Project with Sessions that are not
archived (their start directories are paths inside the old root; rebinding them is not
built yet). The preview binds the canonical root, its repository identity and the
Project's revision; the confirm checks the root again, so a root that changed in between
(another checkout, another branch) is refused, and a Project that moved revision is a
stale preview. The move, its `project.relocated` event and its receipt are one transaction.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable
from typing import Any, Protocol

import orjson
import trio

from maia.config import ProjectRoot, canonical_root
from maia.protocol import (
    MaiaError,
    ProjectRelocateConfirmInput,
    ProjectRelocateConfirmOutput,
    ProjectRelocatePreviewInput,
    ProjectRelocatePreviewOutput,
    check,
    digest_json,
    format_timestamp_ms,
    to_json,
)
from storage import (
    Applied,
    Confirmation,
    ExpectedTarget,
    MutationKey,
    MutationResult,
    Receipt,
    ReceiptTarget,
    append_event,
    compare_and_set,
    issue_preview,
    read_revision,
    run_mutation,
)

from ._context import LOCAL_ACTOR, ServiceContext, mutation_output, not_found
from ._projects import _project, _repository_of, mirror_projects
from ._replay import stored_replay

_CONFIRM = "project.relocate.confirm"


def _digest(project_id: str, root: ProjectRoot, revision: int) -> str:
    identity = root.repository.identity if root.repository is not None else None
    return digest_json(
        {
            "projectId": project_id,
            "rootPath": root.path,
            "repository": identity,
            "expectedRevision": revision,
        }
    )


def _judge(conn: sqlite3.Connection, project_id: str, root: ProjectRoot) -> tuple[Any, int]:
    """The Project's row and revision, after every refusal. Raises `resource_not_found`,
    `invalid_state`."""
    row = conn.execute(
        "SELECT root, repository FROM projects WHERE project_id = ?", (project_id,)
    ).fetchone()
    if row is None:
        raise not_found("project", project_id)
    if row[0] == root.path:
        raise MaiaError(
            "invalid_state",
            f"project {project_id} is already at {root.path}",
            {"resource": "project", "id": project_id, "state": "added", "rootPath": root.path},
        )
    taken = conn.execute(
        "SELECT project_id FROM projects WHERE project_id != ? AND (root = ?"
        " OR (repository_identity IS NOT NULL AND repository_identity = ?))",
        (project_id, root.path, root.repository.identity if root.repository else None),
    ).fetchone()
    if taken is not None:
        raise MaiaError(
            "invalid_state",
            f"{root.path} (or its repository and ref) is Project {taken[0]}",
            {"resource": "project", "id": taken[0], "state": "added"},
        )
    sessions = conn.execute(
        "SELECT count(*) FROM sessions WHERE project_id = ? AND archived = 0", (project_id,)
    ).fetchone()[0]
    if sessions:
        raise MaiaError(
            "invalid_state",
            f"project {project_id} has {sessions} Session(s) not archived; archive them "
            "before relocating (their start directories are inside the old root)",
            {"resource": "project", "id": project_id, "state": "added", "sessions": sessions},
        )
    revision = read_revision(conn, "projects", project_id)
    assert revision is not None
    return row, revision


async def _project_relocate_preview(
    ctx: ServiceContext, params: ProjectRelocatePreviewInput
) -> ProjectRelocatePreviewOutput:
    """Raises `configuration_invalid` (an unusable root), `invalid_state`,
    `resource_not_found`."""
    root = await trio.to_thread.run_sync(canonical_root, params.root_path)

    def issue(conn: sqlite3.Connection) -> tuple[Any, Any, int]:
        row, revision = _judge(conn, params.project_id, root)
        preview = issue_preview(
            conn,
            actor_id=LOCAL_ACTOR,
            operation_id=_CONFIRM,
            input_digest=_digest(params.project_id, root, revision),
            targets=(ExpectedTarget("project", params.project_id, revision),),
            clock=ctx.clock,
            node_epoch=ctx.store.node_epoch,
        )
        return row, preview, revision

    row, preview, revision = await ctx.store.write(issue)
    before = _repository_of(row[1])
    wire: dict[str, Any] = {
        "projectId": params.project_id,
        "fromRoot": row[0],
        "toRoot": root.path,
        "workspaceKind": root.workspace_kind,
        "previewId": preview.preview_id,
        "proof": preview.proof,
        "inputDigest": preview.input_digest,
        "expectedRevision": revision,
        "expiresAt": format_timestamp_ms(preview.expires_ms),
    }
    if before is not None:
        wire["repositoryBefore"] = before.to_json()
    if root.repository is not None:
        wire["repositoryAfter"] = root.repository.to_json()
    return check(ProjectRelocatePreviewOutput, wire, root="result")


async def _project_relocate_confirm(
    ctx: ServiceContext, params: ProjectRelocateConfirmInput
) -> ProjectRelocateConfirmOutput:
    """Raises `confirmation_required`, `configuration_invalid`, `preview_mismatch` (the root
    or its repository changed since the preview), `preview_expired`, `proof_spent`,
    `revision_conflict` (a stale preview), `invalid_state`, `resource_not_found`,
    `idempotency_conflict`."""
    if params.preview_id is None or params.proof is None or params.expected_revision is None:
        raise MaiaError(
            "confirmation_required",
            f"{_CONFIRM} needs a preview and its proof",
            {"method": _CONFIRM},
        )
    replayed = await ctx.read(lambda conn: _replayed(conn, params))
    if replayed is not None:
        return mutation_output(ProjectRelocateConfirmOutput, replayed)
    root = await trio.to_thread.run_sync(canonical_root, params.root_path)
    digest = _digest(params.project_id, root, params.expected_revision)
    if params.input_digest is not None and params.input_digest != digest:
        raise MaiaError(
            "preview_mismatch",
            "the root or its repository changed since the preview; preview again",
            {"previewId": params.preview_id},
        )
    expected = params.expected_revision
    now = ctx.now()

    def apply(conn: sqlite3.Connection) -> Applied:
        row, _ = _judge(conn, params.project_id, root)
        repository = root.repository
        revision = compare_and_set(
            conn,
            "projects",
            params.project_id,
            expected_revision=expected,
            now_ms=now,
            changes={
                "root": root.path,
                "name": root.workspace_kind,
                "repository": orjson.dumps(repository.to_json()).decode() if repository else None,
                "repository_identity": repository.identity if repository else None,
            },
        )
        event = append_event(
            conn,
            owner_id=params.project_id,
            owner_type="project",
            event_type="project.relocated",
            payload={"fromRoot": row[0], "toRoot": root.path},
            now_ms=now,
            aggregate_revision=revision,
            project_id=params.project_id,
            actor_id=LOCAL_ACTOR,
        )
        fresh = conn.execute(
            "SELECT project_id, project_key, root, name, revision, created_ms FROM projects"
            " WHERE project_id = ?",
            (params.project_id,),
        ).fetchone()
        return Applied(
            {"project": to_json(_project(fresh))},
            targets=(ReceiptTarget("project", params.project_id, "updated", expected, revision),),
            event_ids=(event.event_id,),
            project_id=params.project_id,
        )

    result = await _confirmed_mutation(ctx, _CONFIRM, params, digest, now, apply)
    if result.delivery == "new":
        await mirror_projects(ctx)
    return mutation_output(ProjectRelocateConfirmOutput, result)


def _replayed(
    conn: sqlite3.Connection, params: ProjectRelocateConfirmInput
) -> MutationResult | None:
    """The stored result of this commandId when it moved this Project from this revision to
    this root path, found before the root is resolved again: after the move the checkout may
    be on another branch or gone, and the retry must still answer what it did. Anything
    else (another root, another revision) goes on to the digest check, as a first confirm."""

    def same(stored: Receipt) -> bool:
        if not stored.targets:
            return False
        target, project = stored.targets[0], stored.result.get("project", {})
        return (
            target.target_id == params.project_id
            and target.prior_revision == params.expected_revision
            and project.get("rootPath") == os.path.abspath(params.root_path)
        )

    return stored_replay(conn, actor_id=LOCAL_ACTOR, operation_id=_CONFIRM,
                         command_id=params.command_id, digests=(), same=same)  # fmt: skip


class _ConfirmParams(Protocol):
    """What a confirm's input carries for its mutation: the command and the preview."""

    @property
    def command_id(self) -> str: ...
    @property
    def preview_id(self) -> str | None: ...
    @property
    def proof(self) -> str | None: ...


async def _confirmed_mutation(
    ctx: ServiceContext,
    operation_id: str,
    params: _ConfirmParams,
    digest: str,
    now: int,
    apply: Callable[[sqlite3.Connection], Applied],
) -> MutationResult:
    """A confirm's write: spend its preview's proof and run `apply` once for the command
    (a retried command with the same digest replays the stored result)."""
    key = MutationKey(LOCAL_ACTOR, operation_id, params.command_id)
    return await ctx.store.write(
        lambda conn: run_mutation(
            conn,
            key=key,
            input_digest=digest,
            now_ms=now,
            apply=apply,
            confirmation=Confirmation(params.preview_id, params.proof),
            clock=ctx.clock,
            node_epoch=ctx.store.node_epoch,
        )
    )
