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

from maia.config import (
    diff,
    raise_if_any,
    shown_changes,
)
from maia.protocol import (
    ConfigAdmitConfirmInput,
    ConfigAdmitConfirmOutput,
    ConfigAdmitPreviewOutput,
    ConfigScopeInput,
    MaiaError,
    check,
    digest_json,
    format_timestamp_ms,
)
from storage import (
    USER_SCOPE,
    Applied,
    ConfigSnapshot,
    ExpectedTarget,
    MutationResult,
    ReceiptTarget,
    admit_snapshot,
    issue_preview,
    scope_revision,
)

from ._admitted import read_snapshot, snapshot_problem
from ._config_status import _candidate, _config_show, _document, _scope
from ._context import LOCAL_ACTOR, ServiceContext, mutation_output
from ._relocate import _confirmed_mutation, _project_relocate_confirm, _project_relocate_preview
from ._replay import stored_replay

_CONFIRM = "config.admit.confirm"


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


def _unreadable(snapshot: ConfigSnapshot) -> bool:
    """True for an admitted snapshot this build cannot read: admitting the same file again
    changes what is in effect (it replaces the snapshot)."""
    project_id = None if snapshot.scope == USER_SCOPE else snapshot.scope
    return snapshot_problem(snapshot, project_id) is not None


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
        before = read_snapshot(conn, scope)
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
    changed = before is None or before.manifest_digest != candidate.digest or _unreadable(before)
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
            "changes": shown_changes(changes),
            "totalChanges": len(changes),
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
    digest = _input_digest(params.project_id, params.manifest_digest, params.expected_revision)
    replayed = await ctx.read(lambda conn: _replayed(conn, params.command_id, digest))
    if replayed is not None:  # a retry answers what it did, whatever the file holds now
        return mutation_output(ConfigAdmitConfirmOutput, replayed)
    candidate = await _candidate(ctx, params.project_id)
    raise_if_any(candidate.problems)
    assert candidate.manifest is not None
    if digest != params.input_digest:  # values the preview never answered: not the file's fault
        raise MaiaError(
            "preview_mismatch",
            "the input does not match the preview's digest",
            {"previewId": params.preview_id},
        )
    if candidate.digest != params.manifest_digest:
        raise MaiaError(
            "storage_conflict",
            f"{candidate.source} changed since the preview; preview again to see the new diff",
            {"reason": "file_changed", "source": candidate.source},
        )
    scope = _scope(params.project_id)
    target_type, target_id = _target(params.project_id)
    expected = params.expected_revision
    now = ctx.now()

    def apply(conn: sqlite3.Connection) -> Applied:
        before = read_snapshot(conn, scope)
        if (
            before is not None
            and before.manifest_digest == candidate.digest
            and snapshot_problem(before, params.project_id) is None  # else admitting mends it
        ):
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

    result = await _confirmed_mutation(ctx, _CONFIRM, params, digest, now, apply)
    ctx.admitted.admitted()  # new work runs under it from now on, without a restart
    return mutation_output(ConfigAdmitConfirmOutput, result)


def _replayed(conn: sqlite3.Connection, command_id: str, digest: str) -> MutationResult | None:
    """The stored result of this commandId when it admitted these same preview values, found
    before the file is read again: the file may have been edited (or broken) since, and the
    retry must still answer what it did. Anything else goes on as a first confirm (and a
    commandId stored with other values is `idempotency_conflict` there)."""
    return stored_replay(conn, actor_id=LOCAL_ACTOR, operation_id=_CONFIRM,
                         command_id=command_id, digests=(digest,))  # fmt: skip


CONFIG_HANDLERS: Final[Mapping[str, Callable[[ServiceContext, Any], Awaitable[Any]]]] = {
    "config.show": _config_show,
    "config.admit.preview": _config_admit_preview,
    "config.admit.confirm": _config_admit_confirm,
    "project.relocate.preview": _project_relocate_preview,
    "project.relocate.confirm": _project_relocate_confirm,
}
