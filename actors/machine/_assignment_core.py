"""Control's lease machines over the wire: one pure `supervision.leases` Control machine per
assignment, carried unchanged, with its durable part in `machine_assignments`.

Each assignment's `ControlState` holds that one assignment and its one Execution Node. At
open (a Control start) every assignment is rebuilt from its row and `control_restarted`
raises its barrier and pushes its horizon a maximum TTL out (spec MN0 item 4): no work is
placed until a running report confirms a grant issued after it. A launch's epoch and a
grant's (epoch, sequence) are written before they are sent, so a restart never issues one
twice. Placement asks `placement_blockers` (item 9); a replacement launch comes only from
the pure machine's tick after a `stopped` report for that epoch (item 10).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Final

import attrs

from maia.core import Clock
from supervision.leases import (
    ControlAction,
    ControlEvent,
    ControlPhase,
    ControlState,
    LaunchAssignment,
    MachineLeaseRequest,
    NodeStatus,
    Reading,
    RegistrationRecord,
    RequestArrived,
    RequestRefused,
    RollbackProven,
    SendGrant,
    StatusArrived,
    Tick,
    control_restarted,
    control_step,
    new_control,
    placement_blockers,
    set_registration,
)
from supervision.leases._evolve import evolve

from ._assignments import AssignmentRow

log = logging.getLogger("maia.machines")
GRANT_TTL_MS: Final = 30_000  # the spec's example; within [MIN_TTL_MS, MAX_TTL_MS]


@attrs.define
class AssignmentLease:
    """One assignment's pure machine state and its row's identity."""

    row: AssignmentRow
    state: ControlState


class ControlLeases:
    """The lease machines of every assignment this Control Node placed."""

    def __init__(self, control_node_id: str, clock: Clock) -> None:
        self.control_node_id = control_node_id
        self.clock = clock
        self.leases: dict[str, AssignmentLease] = {}

    def now(self) -> Reading:
        return Reading(wall=self.clock.wall_ms(), mono=self.clock.monotonic_ms())

    def restore(self, row: AssignmentRow, registration: RegistrationRecord) -> None:
        """Rebuild an assignment after a Control start: its durable epoch and sequence, then
        the restart discontinuity (barrier and horizon)."""
        state = new_control(self.control_node_id, (row.assignment_id,), (row.machine_id,))
        state = set_registration(state, registration)
        lease = state.assignments[row.assignment_id]
        if row.lease_epoch > 0:
            phase = ControlPhase.RECONCILED if row.phase == "reconciled" else ControlPhase.ACTIVE
            lease = evolve(lease, phase=phase, node_id=row.machine_id, lease_epoch=row.lease_epoch,
                           next_sequence=row.next_sequence)  # fmt: skip
        state = evolve(state, assignments={row.assignment_id: lease})
        state, _ = control_restarted(state, self.now())
        self.leases[row.assignment_id] = AssignmentLease(row, state)

    def add(self, row: AssignmentRow, registration: RegistrationRecord) -> None:
        """A new assignment (first placement): no barrier, nothing issued yet."""
        if row.assignment_id in self.leases:
            return
        state = new_control(self.control_node_id, (row.assignment_id,), (row.machine_id,))
        self.leases[row.assignment_id] = AssignmentLease(row, set_registration(state, registration))

    def of_machine(self, machine_id: str) -> list[AssignmentLease]:
        return [lease for lease in self.leases.values() if lease.row.machine_id == machine_id]

    def _step(self, lease: AssignmentLease, event: ControlEvent) -> Sequence[ControlAction]:
        lease.state, actions = control_step(lease.state, event, self.now())
        for action in actions:
            if isinstance(action, RollbackProven):
                log.error("machine %s: rollback proven (%s)", action.node_id, action.reason)
        return actions

    def request(self, request: MachineLeaseRequest) -> Sequence[ControlAction]:
        """Control's answer to a lease request: `SendGrant` or `RequestRefused`."""
        lease = self.leases.get(request.assignment_id)
        if lease is None or lease.row.machine_id != request.node_id:
            return (RequestRefused(request.node_id, request.request_id, "unknown"),)
        return self._step(lease, RequestArrived(request, GRANT_TTL_MS))

    def status(self, status: NodeStatus) -> list[ControlAction]:
        actions: list[ControlAction] = []
        for lease in self.of_machine(status.node_id):
            actions += self._step(lease, StatusArrived(status))
        return actions

    def tick(self) -> list[tuple[AssignmentLease, LaunchAssignment]]:
        """Advance every machine; the launches it asks for (new epochs, or resends)."""
        launches = []
        for lease in list(self.leases.values()):
            for action in self._step(lease, Tick()):
                if isinstance(action, LaunchAssignment):
                    launches.append((lease, action))
        return launches

    def blockers(self, assignment_id: str) -> tuple[str, ...]:
        lease = self.leases.get(assignment_id)
        if lease is None:
            return ("unknown",)
        return placement_blockers(lease.state, assignment_id, self.now())

    def barrier(self, machine_id: str) -> bool:
        """Whether any assignment on the machine stands behind a barrier."""
        return any(lease.state.assignments[lease.row.assignment_id].barrier is not None
                   for lease in self.of_machine(machine_id))  # fmt: skip

    def horizon_in_ms(self, machine_id: str) -> int | None:
        """The latest horizon of the machine's assignments, from now (negative: reached)."""
        horizons = [lease.state.assignments[lease.row.assignment_id].horizon_ms
                    for lease in self.of_machine(machine_id)]  # fmt: skip
        known = [h for h in horizons if h is not None]
        return max(known) - self.now().mono if known else None

    def set_registration(self, registration: RegistrationRecord) -> None:
        """A revocation or a fresh enrollment: every machine of that node sees it."""
        for lease in self.of_machine(registration.node_id):
            lease.state = set_registration(lease.state, registration)

    def grant_sequence(self, action: SendGrant) -> int:
        """The next sequence to persist once `action`'s grant is issued."""
        return action.grant.renewal_sequence + 1
