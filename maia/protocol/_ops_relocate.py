"""project.relocate as a preview → confirm pair (spec: a move or reclone is a relocation
mutation; editing projects.jsonc never relocates a live Project).

The preview checks the new root as project.add does (descriptor-first, owner and mode, the
repository block), refuses a root or repository identity another Project holds, and shows
the old and new root and repository; the confirm checks the root again and moves the
Project in one transaction with its event and receipt.
"""

# ruff: noqa: RUF009  (field() returns attrs.field: a field definition, not a shared default)

from __future__ import annotations

from typing import Literal

import attrs

from maia.core._fields import field

from ._common import (
    Delivery,
    Project,
    command_id_field,
    digest_field,
    id_field,
    mutation,
    operation,
    path_field,
    revision_field,
    timestamp_field,
)


@attrs.frozen
class ProjectRepository:
    """The repository block of a Project (ProjectInventoryEntryV1.repository)."""

    normalized_remote: str = field(doc="One spelling of the remote.", min_length=1,
                                   max_length=4096)  # fmt: skip
    object_format: Literal["sha1", "sha256"] = field(doc="Object format.")
    expected_head: str | None = field(doc="Branch ref or detached commit.", default=None,
                                      min_length=1, max_length=1024)  # fmt: skip


@attrs.frozen
class ProjectRelocatePreviewInput:
    """Where the Project's root is now."""

    project_id: str = id_field("The Project to move.")
    root_path: str = path_field("Its new absolute root; it must exist.", pattern=r"^/")


@attrs.frozen
class ProjectRelocatePreviewOutput:
    """The move a confirm would make, and the proof to confirm it."""

    project_id: str = id_field("The Project.")
    from_root: str = path_field("Its root now.")
    to_root: str = path_field("Its canonical new root.")
    workspace_kind: Literal["repository", "directory"] = field(doc="What the new root holds.")
    preview_id: str = id_field("The preview.")
    proof: str = field(doc="One-time proof for the confirm.", min_length=16, max_length=128)
    input_digest: str = digest_field("Digest the confirm repeats.")
    expected_revision: int = revision_field("The Project's revision the confirm must find.")
    expires_at: str = timestamp_field("When the proof expires.")
    repository_before: ProjectRepository | None = field(doc="Repository now.", default=None)
    repository_after: ProjectRepository | None = field(doc="Repository there.", default=None)


@attrs.frozen
class ProjectRelocateConfirmInput:
    """Move the Project as previewed (the CLI fills the preview's fields)."""

    command_id: str = command_id_field()
    project_id: str = id_field("The Project to move.")
    root_path: str = path_field("Its new absolute root.", pattern=r"^/")
    preview_id: str | None = id_field("The preview.", default=None)
    proof: str | None = field(doc="The preview's proof.", default=None, min_length=16,
                              max_length=128)  # fmt: skip
    input_digest: str | None = digest_field("The preview's input digest.", default=None)
    expected_revision: int | None = revision_field("The previewed revision.", default=None)


@attrs.frozen
class ProjectRelocateConfirmOutput:
    """The moved Project."""

    delivery: Delivery = field(doc="new, or duplicate for a retried commandId.")
    receipt_id: str = id_field("The command's receipt.")
    project: Project = field(doc="The Project at its new root.")


_ERRORS = ("configuration_invalid", "resource_not_found", "invalid_state")
_CONFIRM_ERRORS = (
    *_ERRORS,
    "revision_conflict",
    "confirmation_required",
    "preview_expired",
    "preview_mismatch",
    "proof_spent",
)

RELOCATE_OPERATIONS = (
    operation(
        operation_id="project.relocate.preview",
        agent_exposure="eligible",
        summary="Check a Project's new root (after a move or a reclone) and show the move.",
        input_type=ProjectRelocatePreviewInput,
        output_type=ProjectRelocatePreviewOutput,
        errors=_ERRORS,
    ),
    mutation(
        operation_id="project.relocate.confirm",
        agent_exposure="human-only",
        summary="Move a Project to the previewed root.",
        input_type=ProjectRelocateConfirmInput,
        output_type=ProjectRelocateConfirmOutput,
        risk="consequential",
        confirmation="required",
        errors=_CONFIRM_ERRORS,
        # The confirm compare-and-sets the projects row with the preview's revision in one
        # transaction: a row another writer moved is revision_conflict.
        without=("storage_conflict",),
        revision_fields=("expectedRevision",),
        event_types=("project.relocated",),
    ),
)
