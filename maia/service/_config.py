"""config.show, config.admit.preview and config.admit.confirm: configuration admission.

A file is read (descriptor-first, off the trio thread) and checked whole on every call;
what the Node runs on is only ever the admitted snapshot in storage, so editing a file
changes nothing until it is admitted. The preview binds the candidate's manifest digest and
the scope's revision into its input digest; the confirm reads the file again and refuses a
file that changed, and storage refuses a scope that moved (a stale preview). The confirm
writes the snapshot, the revision, the `config.admitted` event and the receipt in one
transaction (`run_mutation`).

`effective_config(ctx, project_id)` and `config_files_status(ctx)` are for the rest of the
Node: the Session side takes its limits and executors from the first, node.status reports
files that differ from what is admitted from the second.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final

import trio

from maia.config import (
    Candidate,
    EffectiveConfig,
    ProjectConfig,
    UserConfig,
    diff,
    parse_project_config,
    parse_user_config,
    project_candidate,
    raise_if_any,
    user_candidate,
)
from maia.protocol import MaiaError, check, digest_json, format_timestamp_ms
from maia.protocol._ops_config import (
    ConfigAdmitConfirmInput,
    ConfigAdmitConfirmOutput,
    ConfigAdmitPreviewOutput,
    ConfigScopeInput,
    ConfigScopeStatus,
    ConfigShowOutput,
)
from storage import (
    USER_SCOPE,
    Applied,
    ConfigSnapshot,
    Confirmation,
    ExpectedTarget,
    MutationKey,
    ReceiptTarget,
    admit_snapshot,
    admitted_snapshot,
    issue_preview,
    run_mutation,
    scope_revision,
)

from ._context import LOCAL_ACTOR, ServiceContext, mutation_output, not_found

_CONFIRM = "config.admit.confirm"
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
    return await trio.to_thread.run_sync(project_candidate, root, project_id, key)


def _scope(project_id: str | None) -> str:
    return USER_SCOPE if project_id is None else project_id


def _target(project_id: str | None) -> tuple[str, str]:
    return ("user_config", USER_SCOPE) if project_id is None else ("project", project_id)


def _input_digest(project_id: str | None, manifest_digest: str, revision: int) -> str:
    return digest_json(
        {
            "scope": _scope(project_id),
            "manifestDigest": manifest_digest,
            "expectedRevision": revision,
        }
    )


def _document(snapshot: ConfigSnapshot | None) -> Any:
    return None if snapshot is None else snapshot.manifest.get("document")


async def _config_admit_preview(
    ctx: ServiceContext, params: ConfigScopeInput
) -> ConfigAdmitPreviewOutput:
    """Raises `configuration_invalid` listing every problem of the file (nothing issued),
    `resource_not_found`."""
    candidate = await _candidate(ctx, params.project_id)
    raise_if_any(candidate.problems)
    assert candidate.manifest is not None
    scope = _scope(params.project_id)
    target_type, target_id = _target(params.project_id)

    def issue(conn: sqlite3.Connection) -> tuple[Any, int, Any]:
        before = admitted_snapshot(conn, scope)
        revision = scope_revision(conn, scope)
        preview = issue_preview(
            conn,
            actor_id=LOCAL_ACTOR,
            operation_id=_CONFIRM,
            input_digest=_input_digest(params.project_id, candidate.digest, revision),
            targets=(ExpectedTarget(target_type, target_id, revision),),
            clock=ctx.clock,
            node_epoch=ctx.store.node_epoch,
        )
        return preview, revision, before

    preview, revision, before = await ctx.store.write(issue)
    changes = diff(_document(before), candidate.manifest["document"])
    changed = before is None or before.manifest_digest != candidate.digest
    return check(
        ConfigAdmitPreviewOutput,
        {
            "scope": "user" if params.project_id is None else "project",
            "source": candidate.source,
            "previewId": preview.preview_id,
            "proof": preview.proof,
            "inputDigest": preview.input_digest,
            "manifestDigest": candidate.digest,
            "expectedRevision": revision,
            "expiresAt": format_timestamp_ms(preview.expires_ms),
            "changed": changed,
            "changes": changes,
            **({} if params.project_id is None else {"projectId": params.project_id}),
        },
        root="result",
    )


async def _config_admit_confirm(
    ctx: ServiceContext, params: ConfigAdmitConfirmInput
) -> ConfigAdmitConfirmOutput:
    """Raises `confirmation_required`, `configuration_invalid` (the file has problems now),
    `storage_conflict` (the file changed since the preview), `preview_mismatch`,
    `preview_expired`, `proof_spent`, `revision_conflict` (a stale preview: the scope moved),
    `invalid_state` (already admitted), `resource_not_found`, `idempotency_conflict`."""
    if (
        params.preview_id is None
        or params.proof is None
        or params.input_digest is None
        or params.manifest_digest is None
        or params.expected_revision is None
    ):
        raise MaiaError(
            "confirmation_required",
            f"{_CONFIRM} needs a preview and its proof (maia config admit previews first)",
            {"method": _CONFIRM},
        )
    candidate = await _candidate(ctx, params.project_id)
    raise_if_any(candidate.problems)
    assert candidate.manifest is not None
    if candidate.digest != params.manifest_digest:
        raise MaiaError(
            "storage_conflict",
            f"{candidate.source} changed since the preview; preview again to see the new diff",
            {"reason": "file_changed", "source": candidate.source},
        )
    digest = _input_digest(params.project_id, params.manifest_digest, params.expected_revision)
    if digest != params.input_digest:
        raise MaiaError(
            "preview_mismatch",
            "the input does not match the preview's digest",
            {"previewId": params.preview_id},
        )
    scope = _scope(params.project_id)
    target_type, target_id = _target(params.project_id)
    expected = params.expected_revision
    now = ctx.now()

    def apply(conn: sqlite3.Connection) -> Applied:
        before = admitted_snapshot(conn, scope)
        if before is not None and before.manifest_digest == candidate.digest:
            raise MaiaError(
                "invalid_state",
                f"{candidate.source} is already admitted",
                {"resource": target_type, "id": target_id, "state": "admitted"},
            )
        changes = diff(_document(before), candidate.manifest["document"])  # type: ignore[index]
        snapshot, event = admit_snapshot(
            conn,
            scope=scope,
            expected_revision=expected,
            manifest=candidate.manifest,
            manifest_digest=candidate.digest,
            source_digest=candidate.manifest["source"]["digest"],  # type: ignore[index]
            changed_paths=[c["path"] for c in changes],
            actor_id=LOCAL_ACTOR,
            now_ms=now,
        )
        result: dict[str, Any] = {
            "scope": "user" if params.project_id is None else "project",
            "snapshotId": snapshot.snapshot_id,
            "revision": snapshot.revision,
            "manifestDigest": snapshot.manifest_digest,
            "changes": len(changes),
        }
        if params.project_id is not None:
            result["projectId"] = params.project_id
        return Applied(
            result,
            targets=(
                ReceiptTarget(
                    target_type, target_id, "updated", expected or None, snapshot.revision
                ),
            ),
            event_ids=(event.event_id,),
            project_id=params.project_id,
        )

    key = MutationKey(LOCAL_ACTOR, _CONFIRM, params.command_id)
    result = await ctx.store.write(
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
    return mutation_output(ConfigAdmitConfirmOutput, result)


def _user_of(snapshot: ConfigSnapshot | None, started_with: UserConfig) -> UserConfig:
    if snapshot is None:
        return started_with  # nothing admitted yet: what the Node read when it started
    return parse_user_config(snapshot.manifest["document"], "admitted user configuration")


def _project_of(snapshot: ConfigSnapshot | None, project_id: str) -> ProjectConfig | None:
    document = _document(snapshot)
    if document is None:
        return None
    return parse_project_config(document, "admitted Project configuration", project_id=project_id)


async def effective_config(ctx: ServiceContext, project_id: str | None) -> EffectiveConfig:
    """The admitted configuration work in `project_id` (None: outside a Project) runs on:
    limits narrowed, executors resolvable. Raises `resource_not_found` for an unknown
    Project. Reads storage only, never a file."""

    def read(conn: sqlite3.Connection) -> tuple[ConfigSnapshot | None, ConfigSnapshot | None]:
        project = None
        if project_id is not None:
            scope_revision(conn, project_id)  # raises resource_not_found for an unknown one
            project = admitted_snapshot(conn, project_id)
        return admitted_snapshot(conn, USER_SCOPE), project

    user, project = await ctx.read(read)
    project_config = _project_of(project, project_id) if project_id is not None else None
    return EffectiveConfig(_user_of(user, ctx.config), project_config, project_id)


async def _status(ctx: ServiceContext, project_id: str | None) -> tuple[ConfigScopeStatus, bool]:
    """The scope's status, and whether its file is absent."""
    candidate = await _candidate(ctx, project_id)
    scope = _scope(project_id)

    def read(conn: sqlite3.Connection) -> tuple[ConfigSnapshot | None, int]:
        return admitted_snapshot(conn, scope), scope_revision(conn, scope)

    snapshot, revision = await ctx.read(read)
    absent = candidate.manifest is not None and candidate.manifest["source"]["digest"] == "absent"
    if candidate.problems:
        state = "invalid"
    elif snapshot is None:
        state = "never-admitted"
    else:
        state = "admitted" if snapshot.manifest_digest == candidate.digest else "differs"
    wire: dict[str, Any] = {
        "scope": "user" if project_id is None else "project",
        "source": candidate.source,
        "file": state,
        "revision": revision,
        "problems": [p.to_json() for p in candidate.problems[:100]],
    }
    if project_id is not None:
        wire["projectId"] = project_id
    if snapshot is not None:
        wire["snapshotId"] = snapshot.snapshot_id
        wire["manifestDigest"] = snapshot.manifest_digest
        wire["admittedAt"] = format_timestamp_ms(snapshot.admitted_ms)
    return check(ConfigScopeStatus, wire, root="result"), absent


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


CONFIG_HANDLERS: Final[Mapping[str, Callable[[ServiceContext, Any], Awaitable[Any]]]] = {
    "config.show": _config_show,
    "config.admit.preview": _config_admit_preview,
    "config.admit.confirm": _config_admit_confirm,
}
