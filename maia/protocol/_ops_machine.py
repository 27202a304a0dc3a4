"""Machine operations (issue 16, MN1): enroll an Execution Node, list and show them, revoke.

`machine.enroll` and `machine.revoke` are consequential pairs: the preview judges the change
and returns a one-time proof bound to the actor, the confirm's operation and the input
digest; the confirm repeats the input with the digest, the preview and the proof. The enroll
confirm answers the one-time enrollment token (valid ten minutes), which the Execution Node
presents once (`maia node start --execution --control ws://HOST:PORT --enrollment-token T`)
to receive its machine credential. All are operator-only (`local-user`).
"""

# ruff: noqa: RUF009  (field() returns attrs.field: a field definition, not a shared default)

from __future__ import annotations

from typing import Any, Final, Literal

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
    revision_field,
    timestamp_field,
)
from ._registry import OperationDescriptor

MACHINE_NAME_PATTERN: Final = r"^[a-z][a-z0-9-]{0,62}$"
MachineStateName = Literal["pending", "enrolled", "revoked"]
MachineAction = Literal["enroll", "revoke"]


def machine_name_field(doc: str = "The machine's name.", **kwargs: Any) -> Any:
    return field(doc=doc, pattern=MACHINE_NAME_PATTERN,
                 pattern_doc="must be lowercase letters, digits and -, starting with a letter",
                 **kwargs)  # fmt: skip


def _proof(doc: str = "From the preview (the CLI fills it).", **kwargs: Any) -> Any:
    return field(doc=doc, min_length=1, max_length=128, **kwargs)


@attrs.frozen
class MachineChangeInput:
    """Preview enrolling or revoking the machine `name`."""

    command_id: str = command_id_field()
    name: str = machine_name_field()


@attrs.frozen
class MachineChangeConfirmInput:
    """Confirm a previewed enroll or revoke: the same input, with the preview's proof."""

    command_id: str = command_id_field()
    name: str = machine_name_field()
    input_digest: str | None = digest_field("From the preview (the CLI fills it).", default=None)
    preview_id: str | None = id_field("From the preview (the CLI fills it).", default=None)
    proof: str | None = _proof(default=None)


@attrs.frozen
class MachineChangePreviewOutput:
    """What the confirm will do, and the proof it must carry (valid 2 minutes)."""

    action: MachineAction = field(doc="enroll or revoke.")
    name: str = machine_name_field()
    incarnation: int = revision_field("The registration incarnation the confirm makes or ends.")
    input_digest: str = digest_field("sha256 of the normalized input.")
    preview_id: str = id_field("The preview.")
    proof: str = _proof("One-time proof for the confirm.")
    expires_at: str = timestamp_field("When the proof expires.")
    machine_id: str | None = id_field("The machine (none before its first enrollment).",
                                      default=None)  # fmt: skip


@attrs.frozen
class MachineLink:
    """The machine's link to this Control Node, as this Node's run has seen it."""

    connected: bool = field(doc="An authenticated connection is open now.")
    heartbeats: int = count_field("Statuses received over the open connection.")
    last_report_sequence: int = count_field("The last status's reportSequence (0: none).")
    last_heartbeat_age_ms: int | None = count_field(
        "Milliseconds since the last status, on the monotonic clock.", default=None
    )
    barrier: bool = field(doc="A placement barrier stands (raised at every Control start).",
                          default=True)  # fmt: skip
    assignments: int = count_field("Assignments placed on it.", default=0)
    lease_horizon_in_ms: int | None = field(
        doc="Control's lease horizon of its assignments, from now on the monotonic clock"
        " (negative: reached).",
        default=None,
    )
    refused_frames: int = count_field("Frames refused over the open connection.", default=0)


@attrs.frozen
class Machine:
    """An Execution Node enrolled (or being enrolled) on this Control Node."""

    machine_id: str = id_field("The machine's ID.")
    name: str = machine_name_field()
    state: MachineStateName = field(doc="pending (token issued), enrolled or revoked.")
    incarnation: int = revision_field("The registration incarnation.")
    revocation_revision: int = count_field("Control's revocation revision for it.")
    recovery_required: bool = field(doc="A proven rollback: only a fresh enrollment admits it.")
    revision: int = revision_field("The row's revision.")
    created_at: str = timestamp_field("When it was first enrolled.")
    updated_at: str = timestamp_field("When it last changed.")
    token_expires_at: str | None = timestamp_field("When the pending token expires.",
                                                   default=None)  # fmt: skip
    execution_node_id: str | None = id_field("The Execution Node's own nodeId.", default=None)
    enrolled_at: str | None = timestamp_field("When the token was redeemed.", default=None)
    last_seen_at: str | None = timestamp_field("When its link was last authenticated.",
                                               default=None)  # fmt: skip
    link: MachineLink | None = field(doc="The live link (machine.show only).", default=None)


@attrs.frozen
class MachineEnrollOutput:
    """The pending machine and its one-time enrollment token."""

    delivery: Delivery = field(doc="new, or duplicate for a retried commandId.")
    receipt_id: str = id_field("The command's receipt.")
    machine: Machine = field(doc="The machine, pending until the token is redeemed.")
    token: str = field(doc="The one-time enrollment token (give it to the Execution Node).",
                       min_length=1, max_length=256)  # fmt: skip
    token_expires_at: str = timestamp_field("When the token stops working.")


@attrs.frozen
class MachineRevokeOutput:
    """The revoked machine."""

    delivery: Delivery = field(doc="new, or duplicate for a retried commandId.")
    receipt_id: str = id_field("The command's receipt.")
    machine: Machine = field(doc="The machine after revocation.")


@attrs.frozen
class MachineListInput:
    """List the machines."""


@attrs.frozen
class MachineListOutput:
    """The machines, by name."""

    machines: tuple[Machine, ...] = field(doc="The machines.", max_items=64)


@attrs.frozen
class MachineRef:
    """Names one machine."""

    name: str = machine_name_field()


@attrs.frozen
class MachineShowOutput:
    """A machine and its live link."""

    machine: Machine = field(doc="The machine, with its link.")


def _exposure(value: str) -> dict[str, str]:
    """`agent_exposure` once the registry carries it (issue 20, docs/versioning.md): the
    confirms widen what the Node trusts, so they are human-only; the rest is eligible."""
    names = {f.name for f in attrs.fields(OperationDescriptor)}
    return {"agent_exposure": value} if "agent_exposure" in names else {}


_CONFIRM_ERRORS: Final = ("confirmation_required", "preview_expired", "preview_mismatch",
                          "proof_spent")  # fmt: skip

MACHINE_OPERATIONS: Final = (
    operation(
        operation_id="machine.enroll.preview",
        summary="Preview enrolling an Execution Node under a name.",
        input_type=MachineChangeInput,
        output_type=MachineChangePreviewOutput,
        errors=("invalid_state", "saturated"),
        **_exposure("eligible"),
    ),
    mutation(
        operation_id="machine.enroll.confirm",
        summary="Enroll the previewed Execution Node: answers its one-time token.",
        input_type=MachineChangeConfirmInput,
        output_type=MachineEnrollOutput,
        risk="consequential",
        confirmation="required",
        event_types=("machine.enrollment_issued",),
        errors=("invalid_state", "saturated", *_CONFIRM_ERRORS),
        **_exposure("human-only"),
    ),
    operation(
        operation_id="machine.list",
        summary="List the Execution Nodes enrolled on this Node.",
        input_type=MachineListInput,
        output_type=MachineListOutput,
        **_exposure("eligible"),
    ),
    operation(
        operation_id="machine.show",
        summary="Show an Execution Node: state, link, heartbeats, barrier.",
        input_type=MachineRef,
        output_type=MachineShowOutput,
        errors=("resource_not_found",),
        **_exposure("eligible"),
    ),
    operation(
        operation_id="machine.revoke.preview",
        summary="Preview revoking an Execution Node's credential.",
        input_type=MachineChangeInput,
        output_type=MachineChangePreviewOutput,
        errors=("resource_not_found", "invalid_state"),
        **_exposure("eligible"),
    ),
    mutation(
        operation_id="machine.revoke.confirm",
        summary="Revoke the previewed Execution Node: its credential is refused from now on.",
        input_type=MachineChangeConfirmInput,
        output_type=MachineRevokeOutput,
        risk="consequential",
        confirmation="required",
        event_types=("machine.revoked",),
        errors=("resource_not_found", "invalid_state", *_CONFIRM_ERRORS),
        **_exposure("human-only"),
    ),
)
