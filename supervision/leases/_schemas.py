"""The MN0 wire shapes: assignment identity, lease request, grant, report and status.

One attrs class per shape on `maia.core`'s schema system, the one the operation registry
uses: each field's `maia.core.field` metadata carries its constraint, unknown keys are
refused (a reader built before a field must fail, not guess), and every failure is a
`validation_failed` MaiaError naming the field's path. The JSON Schema comes from the same
metadata. Rules between fields are checked in the constructors (`CrossFieldError`), so a
shape our own machines build obeys them too. Ordering between grants is not a schema matter:
the machines in `_node` and `_control` enforce it. Wire keys are camelCase.
"""

# ruff: noqa: RUF009  (field() returns attrs.field: a field definition, not a shared default)

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, TypeVar

import attrs

from maia.core import CrossFieldError, MaiaError, check, field, to_json

from ._bounds import MAX_TTL_MS, MIN_TTL_MS
from ._fields import count, digest, timestamp, timestamp_ms, wire_id
from ._spool import EvidenceSpoolStatus

Phase = Literal["starting", "running", "stopping", "stopped"]
RequestKind = Literal["acquire", "renew"]
T = TypeVar("T")

# The private alias the simulations use for a grant's wall-clock readings.
_timestamp_ms = timestamp_ms


@attrs.frozen
class MachineAssignment:
    """The exact thing a Control Node places: who, which registration, what environment."""

    assignment_id: str = wire_id("The assignment, named by Control.")
    control_node_id: str = wire_id("The Control Node that placed it.")
    registration_incarnation: int = count("The Node registration it was placed under.", 1)
    project_id: str = wire_id("The Project it runs for.")
    environment_id: str = wire_id("The Execution Environment.")
    environment_revision: int = count("The immutable revision of that environment.", 1)
    environment_digest: str = digest("The sha256: digest of that revision's definition.")

    @property
    def definition_key(self) -> tuple[str, str, int]:
        """(controlNodeId, environmentId, environmentRevision): one immutable definition."""
        return (self.control_node_id, self.environment_id, self.environment_revision)


@attrs.frozen
class MachineLeaseRequest:
    """A Node's request for a grant (acquire or renew), under a never-reused requestId."""

    request_id: str = wire_id("Never reused by this Node.")
    node_id: str = wire_id("The requesting Node.")
    assignment_id: str = wire_id("The assignment the lease is for.")
    lease_epoch: int = count("The lease epoch the Node holds or asks for.", 1)
    kind: RequestKind = field(doc="acquire for a new epoch, renew within one.")


@attrs.frozen
class MachineLeaseGrant:
    """Control's answer to one request. The timestamps carry only the duration.

    expiresAt - issuedAt lies within the TTL bounds (MIN_TTL_MS..MAX_TTL_MS).
    """

    assignment_id: str = wire_id("The assignment granted.")
    lease_epoch: int = count("The epoch granted.", 1)
    request_id: str = wire_id("The request this grant answers.")
    renewal_sequence: int = count("Orders grants within one epoch.", 1)
    revocation_revision: int = count("Control's revocation revision for the assignment.", 0)
    acknowledged_through: int = count("Cumulative acknowledgement of the evidence spool.", 0)
    issued_at: str = timestamp("Control's wall clock at issue.")
    expires_at: str = timestamp("issuedAt plus the granted duration.")
    duration_ms: int = attrs.field(init=False, eq=False, repr=False)

    @duration_ms.default
    def _duration(self) -> int:
        return timestamp_ms(self.expires_at, "expiresAt") - timestamp_ms(self.issued_at, "issuedAt")

    def __attrs_post_init__(self) -> None:
        if not MIN_TTL_MS <= self.duration_ms <= MAX_TTL_MS:
            raise CrossFieldError(
                "expiresAt",
                f"the duration {self.duration_ms} ms is outside [{MIN_TTL_MS}, {MAX_TTL_MS}] ms",
            )

    @property
    def pair(self) -> tuple[int, int]:
        """(leaseEpoch, renewalSequence): the order a Node applies grants in."""
        return (self.lease_epoch, self.renewal_sequence)


@attrs.frozen
class MachineLeaseReport:
    """What a Node says about one assignment: its phase, the grant it applied, its spool.

    appliedRequestId and appliedRenewalSequence are both null or both set; a running report
    names the grant it applied.
    """

    assignment_id: str = wire_id("The assignment reported on.")
    lease_epoch: int = count("The epoch the Node holds.", 1)
    phase: Phase = field(doc="Where the assignment's execution is.")
    applied_request_id: str | None = wire_id(
        "The request of the last grant applied, or null.", nullable=True
    )
    applied_renewal_sequence: int | None = count(
        "The renewal sequence of that grant, or null.", 1, nullable=True
    )
    observed_revocation_revision: int = count("The highest revocation revision seen.", 0)
    spool: EvidenceSpoolStatus = field(doc="The evidence spool of this assignment.")

    def __attrs_post_init__(self) -> None:
        if (self.applied_request_id is None) != (self.applied_renewal_sequence is None):
            missing = "appliedRenewalSequence"
            if self.applied_request_id is None:
                missing = "appliedRequestId"
            raise CrossFieldError(
                missing, "appliedRequestId and appliedRenewalSequence come together"
            )
        if self.phase == "running" and self.applied_request_id is None:
            raise CrossFieldError("phase", "a running report names the grant it applied")


@attrs.frozen
class NodeStatus:
    """One authenticated status message: the heartbeat plus a report per assignment."""

    node_id: str = wire_id("The reporting Node.")
    registration_incarnation: int = count("The Node's registration incarnation.", 1)
    report_sequence: int = count("Increases with every status this Node sends.", 1)
    reports: tuple[MachineLeaseReport, ...] = field(doc="One report per assignment held.")


def parse_wire(cls: type[T], value: Mapping[str, Any]) -> T:
    """Check `value` as `cls`, refusing unknown fields and out-of-bound values.

    Raises `MaiaError("validation_failed")` whose message names the shape and the field's
    path (also in `details["path"]`, `$` for the object itself).
    """
    if isinstance(value, Mapping) and not isinstance(value, dict):
        value = dict(value)
    try:
        return check(cls, value, root="$")
    except MaiaError as error:
        text = error.message.removeprefix("$: ")
        raise MaiaError("validation_failed", f"{cls.__name__}: {text}", error.details) from None


def to_wire(value: object) -> dict[str, Any]:
    """The camelCase JSON object of an MN0 shape."""
    result: dict[str, Any] = to_json(value)
    return result
