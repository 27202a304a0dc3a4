"""What the assignment actors publish for everyone else to read, in memory: each
assignment's row and lease machine as of its last step, and the newest registration of
each machine (a revocation applies to every lease machine of that machine at once).

Only an assignment's actor steps its machine (`MachineAssignmentActor`); the relay, the
placement wait and `machine.show` read the snapshots here, synchronously (item-9 blockers
are pure functions of a snapshot and the clock). A registration set here is applied to the
snapshots at once and to each actor's next step.
"""

from __future__ import annotations

import attrs

from maia.core import Clock
from supervision.leases import (
    ControlPhase,
    ControlState,
    Reading,
    RegistrationRecord,
    placement_blockers,
    set_registration,
)

from ._assignments import AssignmentRow
from ._links import LinkBoard


@attrs.frozen
class AssignmentLease:
    """One assignment's row and its pure machine, as its actor last left them."""

    row: AssignmentRow
    state: ControlState


class AssignmentBoard:
    """See the module."""

    def __init__(self, clock: Clock, links: LinkBoard) -> None:
        self.clock = clock
        self.links = links
        self.leases: dict[str, AssignmentLease] = {}
        self.registrations: dict[str, RegistrationRecord] = {}

    def now(self) -> Reading:
        return Reading(wall=self.clock.wall_ms(), mono=self.clock.monotonic_ms())

    def publish(self, lease: AssignmentLease) -> AssignmentLease:
        """Record an actor's step (under the newest registration); the link's barrier."""
        known = self.registrations.get(lease.row.machine_id)
        if known is not None and lease.state.nodes[known.node_id].registration != known:
            lease = attrs.evolve(lease, state=set_registration(lease.state, known))
        self.leases[lease.row.assignment_id] = lease
        link = self.links.get(lease.row.machine_id)
        if link is not None:
            link.barrier = self.barrier(lease.row.machine_id)
        return lease

    def set_registration(self, registration: RegistrationRecord) -> None:
        """A revocation or a fresh enrollment: every machine of that node sees it now."""
        self.registrations[registration.node_id] = registration
        for lease in self.of_machine(registration.node_id):
            self.publish(lease)

    def of_machine(self, machine_id: str) -> list[AssignmentLease]:
        return [lease for lease in self.leases.values() if lease.row.machine_id == machine_id]

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
        """The latest horizon of the machine's live assignments (launching or active), from
        now (negative: reached); None when none is live. A reconciled one holds no lease,
        though its machine keeps a horizon (a Control start moves every one a maximum TTL
        out)."""
        live = (ControlPhase.ACTIVE, ControlPhase.LAUNCHING)
        assignments = [lease.state.assignments[lease.row.assignment_id]
                       for lease in self.of_machine(machine_id)]  # fmt: skip
        horizons = [a.horizon_ms for a in assignments if a.phase in live]
        known = [h for h in horizons if h is not None]
        return max(known) - self.now().mono if known else None
