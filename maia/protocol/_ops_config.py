"""Configuration operations (spec: Configuration contracts; Resolution and admission):
config.show, and admission as a preview → confirm pair.

A scope is the user's configuration (`~/.maia/config.jsonc`, no `projectId`) or one
Project's (`<root>/.maia/config.jsonc`, `projectId`). The preview reads the file as it is,
checks it whole, and answers the exact diff against what is admitted with a one-time proof;
the confirm reads the file again and commits only if it still has the manifest the preview
showed and the scope is still at the revision the preview saw.
"""

# ruff: noqa: RUF009  (field() returns attrs.field: a field definition, not a shared default)

from __future__ import annotations

from typing import Any, Literal

import attrs

from maia.core._fields import field

from ._common import (
    Delivery,
    command_id_field,
    count_field,
    digest_field,
    id_field,
    mutation,
    operation,
    path_field,
    revision_field,
    timestamp_field,
)
from ._config_status import MAX_PROBLEMS as MAX_PROBLEMS
from ._config_status import ConfigProblem as ConfigProblem
from ._config_status import ConfigScope as ConfigScope
from ._config_status import ConfigScopeStatus as ConfigScopeStatus
from ._config_status import FileState as FileState
from ._ops_relocate import RELOCATE_OPERATIONS

ChangeKind = Literal["added", "removed", "changed"]
MAX_CHANGES = 100


def _project_field() -> Any:
    return id_field("The Project whose file to use (absent: the user's).", default=None)


@attrs.frozen
class ConfigScopeInput:
    """Which configuration: a Project's (projectId) or, without one, the user's."""

    project_id: str | None = _project_field()


@attrs.frozen
class ConfigChange:
    """One key that admission changes; lists are compared whole."""

    path: str = field(doc="The key's dotted path.", min_length=1, max_length=512)
    change: ChangeKind = field(doc="added, removed or changed.")
    before: object = field(doc="The admitted value.", default=None, opaque="config value")
    after: object = field(doc="The file's value.", default=None, opaque="config value")


@attrs.frozen
class ConfigShowOutput:
    """The effective configuration, where each value comes from, and each file's state."""

    user: ConfigScopeStatus = field(doc="The user configuration.")
    effective: object = field(
        doc="Effective values, each {value, source}; source is default, user, project or builtin.",
        opaque="effective configuration",
    )
    project: ConfigScopeStatus | None = field(doc="The Project's configuration.", default=None)


@attrs.frozen
class ConfigAdmitPreviewOutput:
    """The exact change admission would make, and the proof to confirm it."""

    scope: ConfigScope = field(doc="user or project.")
    source: str = path_field("The file read.")
    preview_id: str = id_field("The preview.")
    proof: str = field(doc="One-time proof for the confirm.", min_length=16, max_length=128)
    input_digest: str = digest_field("Digest the confirm repeats.")
    manifest_digest: str = digest_field("The candidate manifest the confirm must still find.")
    expected_revision: int = count_field("The scope's revision the confirm must still find.")
    expires_at: str = timestamp_field("When the proof expires.")
    changed: bool = field(doc="Whether the file differs from what is admitted.")
    changes: tuple[ConfigChange, ...] = field(
        doc="Key by key, what admission changes (the first 100; a value over 2048 bytes of "
        "JSON is shown by its size and digest).",
        max_items=MAX_CHANGES,
    )
    total_changes: int = count_field("How many keys change in all.")
    project_id: str | None = id_field("The Project (project scope).", default=None)


@attrs.frozen
class ConfigAdmitConfirmInput:
    """Admit what the preview showed: its proof, digests and revision (the CLI fills them)."""

    command_id: str = command_id_field()
    project_id: str | None = _project_field()
    preview_id: str | None = id_field("The preview.", default=None)
    proof: str | None = field(doc="The preview's proof.", default=None, min_length=16,
                              max_length=128)  # fmt: skip
    input_digest: str | None = digest_field("The preview's input digest.", default=None)
    manifest_digest: str | None = digest_field("The previewed manifest.", default=None)
    expected_revision: int | None = count_field("The previewed revision.", default=None)


@attrs.frozen
class ConfigAdmitConfirmOutput:
    """The admitted snapshot and the scope's new revision."""

    delivery: Delivery = field(doc="new, or duplicate for a retried commandId.")
    receipt_id: str = id_field("The command's receipt.")
    scope: ConfigScope = field(doc="user or project.")
    snapshot_id: str = id_field("The admitted snapshot.")
    revision: int = revision_field("The scope's new revision.")
    manifest_digest: str = digest_field("The admitted manifest.")
    changes: int = count_field("How many keys changed.")
    project_id: str | None = id_field("The Project (project scope).", default=None)


# The preview answers an admitted file as `changed: false`; only the confirm refuses it.
_ADMIT_ERRORS = ("configuration_invalid", "resource_not_found")
_CONFIRM_ERRORS = (
    *_ADMIT_ERRORS,
    "invalid_state",
    "revision_conflict",
    "confirmation_required",
    "preview_expired",
    "preview_mismatch",
    "proof_spent",
)

CONFIG_OPERATIONS = (
    operation(
        operation_id="config.show",
        agent_exposure="eligible",
        summary="The effective configuration, where each value comes from, and whether a "
        "file differs from what is admitted.",
        input_type=ConfigScopeInput,
        output_type=ConfigShowOutput,
        errors=("resource_not_found",),
    ),
    operation(
        operation_id="config.admit.preview",
        agent_exposure="eligible",
        summary="Check a configuration file and show exactly what admitting it changes.",
        input_type=ConfigScopeInput,
        output_type=ConfigAdmitPreviewOutput,
        errors=_ADMIT_ERRORS,
    ),
    mutation(
        operation_id="config.admit.confirm",
        agent_exposure="human-only",
        summary="Admit the previewed configuration: new work uses it, no restart needed.",
        input_type=ConfigAdmitConfirmInput,
        output_type=ConfigAdmitConfirmOutput,
        risk="consequential",
        confirmation="required",
        errors=_CONFIRM_ERRORS,
        revision_fields=("expectedRevision",),
        event_types=("config.admitted",),
    ),
    *RELOCATE_OPERATIONS,
)
