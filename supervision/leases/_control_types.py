"""The Control-side lease machine's vocabulary: per-assignment state, events and actions."""

from __future__ import annotations

import enum
from collections.abc import Mapping

import attrs

from ._registration import RegistrationRecord
from ._schemas import MachineLeaseGrant, MachineLeaseReport, MachineLeaseRequest, NodeStatus


class ControlPhase(enum.Enum):
    UNPLACED = "unplaced"
    LAUNCHING = "launching"
    ACTIVE = "active"
    RECONCILED = "reconciled"


@attrs.frozen
class IssuedGrant:
    """A grant Control issued, with its issue reading on Control's monotonic clock."""

    grant: MachineLeaseGrant
    issued_ms: int

    @property
    def expiry_ms(self) -> int:
        return self.issued_ms + self.grant.duration_ms


@attrs.frozen
class AssignmentLease:
    """One assignment as Control sees it.

    `grants` holds the last grant a running report confirmed (first) and every grant issued
    since, because the Node may hold any of them; `horizon_ms` is never lowered by a grant.
    `barrier` is the newest (leaseEpoch, renewalSequence) issued before a discontinuity;
    `floor_ms` the discontinuity's horizon, both dropped together when the barrier clears.
    """

    assignment_id: str
    phase: ControlPhase = ControlPhase.UNPLACED
    node_id: str | None = None
    previous_node_id: str | None = None
    lease_epoch: int = 0
    next_sequence: int = 1
    next_work: int = 1
    grants: tuple[IssuedGrant, ...] = ()
    horizon_ms: int | None = None
    floor_ms: int | None = None
    barrier: tuple[int, int] | None = None
    last_report: MachineLeaseReport | None = None


@attrs.frozen
class NodeRecord:
    """A registration plus what its heartbeats and statuses told Control."""

    registration: RegistrationRecord
    last_heartbeat_ms: int | None = None
    last_report_sequence: int = 0
    fenced: bool = False


@attrs.frozen
class ControlState:
    control_node_id: str
    suspend_aware: bool
    assignments: Mapping[str, AssignmentLease]
    nodes: Mapping[str, NodeRecord]
    baseline: tuple[int, int] | None = None


# Events --------------------------------------------------------------------------------


@attrs.frozen
class RequestArrived:
    """A Node's request; `duration_ms` is the TTL Control's policy chose for the answer."""

    request: MachineLeaseRequest
    duration_ms: int


@attrs.frozen
class StatusArrived:
    """An authenticated Node status (the heartbeat and its reports)."""

    status: NodeStatus


@attrs.frozen
class Tick:
    """Time passed: detect discontinuities, launch, and place work where item 9 holds."""


@attrs.frozen
class Discontinuity:
    """A restart or a resume of Control (a clock disagreement is detected by observation)."""

    cause: str


@attrs.frozen
class Fence:
    node_id: str


ControlEvent = RequestArrived | StatusArrived | Tick | Discontinuity | Fence


# Actions -------------------------------------------------------------------------------


@attrs.frozen
class SendGrant:
    node_id: str
    grant: MachineLeaseGrant
    duplicate: bool


@attrs.frozen
class RequestRefused:
    node_id: str
    request_id: str
    reason: str


@attrs.frozen
class LaunchAssignment:
    node_id: str
    assignment_id: str
    lease_epoch: int
    replacement: bool


@attrs.frozen
class PlaceWork:
    node_id: str
    assignment_id: str
    lease_epoch: int
    work_id: str


@attrs.frozen
class DiscontinuityRaised:
    cause: str
    horizon_ms: int


@attrs.frozen
class RollbackProven:
    node_id: str
    reason: str


@attrs.frozen
class StatusIgnored:
    node_id: str
    reason: str


ControlAction = (
    SendGrant
    | RequestRefused
    | LaunchAssignment
    | PlaceWork
    | DiscontinuityRaised
    | RollbackProven
    | StatusIgnored
)
