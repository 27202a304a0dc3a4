"""The Node-side lease machine's vocabulary: readings, phases, state, events and actions.

Kept apart from the transition table in `_node` so the table module holds only rules.
Events and actions are frozen attrs classes that are never subclassed; the state is
frozen, so "a replay changes nothing" is checked by plain equality.
"""

from __future__ import annotations

import enum

import attrs

from ._schemas import MachineLeaseGrant, MachineLeaseRequest
from ._spool import EvidenceSpool


@attrs.frozen
class Reading:
    """One party's clock readings, taken by the caller: monotonic and wall, in ms."""

    mono: int
    wall: int


class NodePhase(enum.Enum):
    IDLE = "idle"
    STARTING = "starting"
    RUNNING = "running"
    STOPPING = "stopping"
    STOPPED = "stopped"


@attrs.frozen
class Outstanding:
    """The one unanswered request: its id and its first-send reading, kept across retries."""

    request: MachineLeaseRequest
    first_send_ms: int
    last_send_ms: int


@attrs.frozen
class NodeLeaseState:
    """One assignment as one Node sees it. Durable across a restart: the epoch, the phase,
    the applied pair, the revocation high-water mark and the spool (see `node_restarted`)."""

    node_id: str
    assignment_id: str
    boot: str
    suspend_aware: bool = True
    renew_before_ms: int = 15_000
    phase: NodePhase = NodePhase.IDLE
    lease_epoch: int = 0
    next_request: int = 1
    outstanding: Outstanding | None = None
    deadline_ms: int | None = None
    expired: bool = True
    applied_pair: tuple[int, int] | None = None
    applied_request_id: str | None = None
    revocation_high_water: int = 0
    tripwire: tuple[int, int] | None = None
    applied_ms: int | None = None
    stop_started_ms: int | None = None
    spool: EvidenceSpool = attrs.field()

    @spool.default
    def _spool(self) -> EvidenceSpool:
        return EvidenceSpool(source_id=f"{self.node_id}.{self.assignment_id}")

    def lease_valid(self, now_ms: int) -> bool:
        """Whether the local lease holds at monotonic reading `now_ms`."""
        return not self.expired and self.deadline_ms is not None and now_ms < self.deadline_ms


# Events --------------------------------------------------------------------------------


@attrs.frozen
class Launch:
    """Control asks this Node to run the assignment at `lease_epoch`."""

    lease_epoch: int


@attrs.frozen
class Wake:
    """Time passed: check the deadline and the tripwire, renew or retry when due."""


@attrs.frozen
class GrantArrived:
    grant: MachineLeaseGrant


@attrs.frozen
class WorkArrived:
    work_id: str
    lease_epoch: int
    size: int = 1


@attrs.frozen
class HostResumed:
    """The host reports a resume from suspend: the lease is treated as expired."""


@attrs.frozen
class CleanupConfirmed:
    """The process tree of `lease_epoch` is gone."""

    lease_epoch: int


NodeEvent = Launch | Wake | GrantArrived | WorkArrived | HostResumed | CleanupConfirmed


# Actions -------------------------------------------------------------------------------


@attrs.frozen
class SendRequest:
    request: MachineLeaseRequest
    retry: bool


@attrs.frozen
class StartExecution:
    lease_epoch: int


@attrs.frozen
class StopExecution:
    lease_epoch: int
    reason: str


@attrs.frozen
class GrantApplied:
    request_id: str
    pair: tuple[int, int]
    deadline_ms: int


@attrs.frozen
class GrantReplayed:
    request_id: str


@attrs.frozen
class GrantRefused:
    request_id: str
    reason: str


@attrs.frozen
class WorkAdmitted:
    work_id: str
    sequence: int


@attrs.frozen
class WorkRefused:
    work_id: str
    reason: str


@attrs.frozen
class ReportNow:
    """Phase or applied grant changed: send a status now rather than at the next beat."""


@attrs.frozen
class Ignored:
    phase: NodePhase
    event: str


NodeAction = (
    SendRequest
    | StartExecution
    | StopExecution
    | GrantApplied
    | GrantReplayed
    | GrantRefused
    | WorkAdmitted
    | WorkRefused
    | ReportNow
    | Ignored
)
