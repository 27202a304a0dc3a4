"""Approval operations (issue 17): a harness's permission request as a durable record of its
Session. `approval.list` (pending first; filters by Session and state), `approval.show`, and
`approval.respond` (allow or deny, idempotent by commandId with a receipt). An answer to an
approval that was already answered, withdrawn or expired is refused `approval_not_pending`.
"""

# ruff: noqa: RUF009  (field() returns attrs.field: a field definition, not a shared default)

from __future__ import annotations

from typing import Literal

import attrs

from maia.core._fields import field, spec

from ._agent_shapes import MAX_PROMPT_OPTIONS, MAX_PROMPT_SUMMARY_BYTES
from ._common import (
    Delivery,
    command_id_field,
    cursor_field,
    id_field,
    mutation,
    operation,
    revision_field,
    timestamp_field,
)

ApprovalState = Literal["pending", "allowed", "denied", "withdrawn", "expired"]
Decision = Literal["allow", "deny"]
MAX_APPROVALS_LISTED = 100


@attrs.frozen
class Approval:
    """A permission request a worker asked of a person, and what became of it."""

    approval_id: str = id_field("The approval.")
    session_id: str = id_field("Its Session.")
    turn_id: str = id_field("The turn that asked.")
    kind: str = field(doc="command, file_change, tool, question, ...", min_length=1,
                      max_length=64)  # fmt: skip
    summary: str = field(doc="What the agent wants to do.", max_length=MAX_PROMPT_SUMMARY_BYTES,
                         length_unit="utf8-bytes")  # fmt: skip
    options: tuple[str, ...] = field(doc="The answers offered.", max_items=MAX_PROMPT_OPTIONS,
                                     items=spec(min_length=1, max_length=64))  # fmt: skip
    can_remember: bool = field(doc="Whether remember (always allow) applies.")
    state: ApprovalState = field(doc="pending until answered, withdrawn or expired.")
    revision: int = revision_field("The approval's revision.")
    created_at: str = timestamp_field("When it was asked.")
    expires_at: str | None = timestamp_field("When it expires (absent: never).", default=None)
    resolved_at: str | None = timestamp_field("When it left pending.", default=None)
    remember: bool = field(doc="Allowed for the rest of the conversation.", default=False)
    message: str | None = field(doc="The denial's message, or why it was withdrawn.",
                                default=None, max_length=2000)  # fmt: skip


@attrs.frozen
class ApprovalListInput:
    """List approvals, pending first, then newest first."""

    session_id: str | None = id_field("Only this Session's.", default=None)
    state: ApprovalState | None = field(doc="Only approvals in this state.", default=None)
    limit: int = field(doc="At most this many.", default=50, minimum=1,
                       maximum=MAX_APPROVALS_LISTED)  # fmt: skip
    cursor: str | None = cursor_field()


@attrs.frozen
class ApprovalListOutput:
    """Approvals, pending first; a page is cut under the 1 MiB frame (`nextCursor`)."""

    approvals: tuple[Approval, ...] = field(doc="The approvals.", max_items=MAX_APPROVALS_LISTED)
    next_cursor: str | None = field(doc="Next page; null on the last.")


@attrs.frozen
class ApprovalRef:
    """Names one approval."""

    approval_id: str = id_field("The approval.")


@attrs.frozen
class ApprovalShowOutput:
    """One approval."""

    approval: Approval = field(doc="The approval.")


@attrs.frozen
class ApprovalRespondInput:
    """Allow or deny a pending approval; the worker's waiting request gets the answer."""

    command_id: str = command_id_field()
    approval_id: str = id_field("The pending approval.")
    decision: Decision = field(doc="allow or deny.")
    remember: bool = field(doc="Allow for the rest of the conversation (the harness's own "
                           "always-allow).", default=False)  # fmt: skip
    message: str | None = field(doc="Told to the agent with a denial.", default=None,
                                min_length=1, max_length=2000)  # fmt: skip


@attrs.frozen
class ApprovalRespondOutput:
    """The answered approval, how the command was delivered and its receipt."""

    delivery: Delivery = field(doc="new, or duplicate for a retried commandId.")
    receipt_id: str = id_field("The command's receipt.")
    approval: Approval = field(doc="The approval after the answer.")


APPROVAL_OPERATIONS = (
    operation(
        operation_id="approval.list",
        agent_exposure="eligible",
        summary="List approvals, pending first (filter by Session or state), paged by cursor.",
        input_type=ApprovalListInput,
        output_type=ApprovalListOutput,
        errors=("invalid_cursor", "cursor_reset_required"),
    ),
    operation(
        operation_id="approval.show",
        agent_exposure="eligible",
        summary="Show an approval: what the agent asks and what became of it.",
        input_type=ApprovalRef,
        output_type=ApprovalShowOutput,
        errors=("resource_not_found",),
    ),
    mutation(
        operation_id="approval.respond",
        agent_exposure="human-only",
        summary="Allow or deny a pending approval.",
        input_type=ApprovalRespondInput,
        output_type=ApprovalRespondOutput,
        errors=("resource_not_found", "approval_not_pending"),
        event_types=("approval.allowed", "approval.denied", "session.running"),
        effect_class="native-reconcilable",
    ),
)
