"""The invariants the harness checks at every step, from its own record of what happened.

The checker does not ask the machines whether they behaved: it keeps an independent model
(every grant issued with its issue reading, every status Control accepted, every
discontinuity as the faults caused it, every process tree alive) and judges each decision
against it:
- `two_executions`: never two live executions of one assignment;
- `deadline_after_horizon`: a Node's local deadline never falls after Control's horizon;
- `placement_without_item9`: work is placed only when item 9 holds;
- `replay_changed_state`: a replayed or refused message changes nothing;
- `admission_without_lease`: a Node admits work only under a valid local lease;
- `no_liveness`: once the faults heal, work is placed again within `LIVENESS_BOUND_MS`.
"""

from __future__ import annotations

import attrs

from supervision.leases import (
    HEARTBEAT_INTERVAL_MS,
    HEARTBEAT_MISSES,
    MachineLeaseGrant,
    NodeStatus,
)

LIVENESS_BOUND_MS = 120_000


@attrs.frozen
class Violation:
    seed: int
    invariant: str
    at_ms: int
    detail: str


@attrs.define
class _Issued:
    grant: MachineLeaseGrant
    issued_mono: int
    order: int


@attrs.define
class Checker:
    seed: int
    violations: list[Violation] = attrs.Factory(list)
    checks: int = 0
    issued: dict[tuple[str, int], list[_Issued]] = attrs.Factory(dict)
    statuses: dict[str, NodeStatus] = attrs.Factory(dict)
    heartbeats: dict[str, int] = attrs.Factory(dict)
    discontinuity_order: int = -1
    order: int = 0
    placements: dict[str, list[int]] = attrs.Factory(dict)

    def fail(self, invariant: str, t: int, detail: str) -> None:
        self.violations.append(Violation(self.seed, invariant, t, detail))

    def check(self, ok: bool, invariant: str, t: int, detail: str) -> None:
        self.checks += 1
        if not ok:
            self.fail(invariant, t, detail)

    # What Control did and heard ---------------------------------------------------------

    def discontinuity(self) -> None:
        """Control suffered one (restart, resume, a wall step beyond the budget): ground
        truth from the fault, not from Control's own detection."""
        self.order += 1
        self.discontinuity_order = self.order

    def grant_issued(self, grant: MachineLeaseGrant, control_mono: int) -> None:
        self.order += 1
        key = (grant.assignment_id, grant.lease_epoch)
        self.issued.setdefault(key, []).append(_Issued(grant, control_mono, self.order))

    def status_delivered(self, status: NodeStatus, control_mono: int) -> None:
        """Control heard `status`; like Control, keep only the newest per Node."""
        last = self.statuses.get(status.node_id)
        if last is None or status.report_sequence > last.report_sequence:
            self.statuses[status.node_id] = status
            self.heartbeats[status.node_id] = control_mono

    def placement(
        self,
        t: int,
        node_id: str,
        assignment_id: str,
        epoch: int,
        control_mono: int,
        admitted: bool,
    ) -> None:
        """Item 9, judged from the checker's own record."""
        self.placements.setdefault(assignment_id, []).append(t)
        where = f"{assignment_id}@{node_id} epoch {epoch}"
        beat = self.heartbeats.get(node_id)
        self.check(
            beat is not None and (control_mono - beat) // HEARTBEAT_INTERVAL_MS < HEARTBEAT_MISSES,
            "placement_without_item9",
            t,
            f"{where}: four heartbeats missed",
        )
        self.check(admitted, "placement_without_item9", t, f"{where}: registration not admitted")
        grants = self.issued.get((assignment_id, epoch), [])
        newest = grants[-1] if grants else None
        status = self.statuses.get(node_id)
        report = None
        if status is not None:
            report = next((r for r in status.reports if r.assignment_id == assignment_id), None)
        confirmed = (
            newest is not None
            and report is not None
            and report.phase == "running"
            and report.lease_epoch == epoch
            and report.applied_request_id == newest.grant.request_id
            and report.applied_renewal_sequence == newest.grant.renewal_sequence
        )
        self.check(confirmed, "placement_without_item9", t, f"{where}: newest grant unconfirmed")
        if newest is None:
            return
        self.check(
            newest.order > self.discontinuity_order,
            "placement_without_item9",
            t,
            f"{where}: barrier: newest grant issued before the discontinuity",
        )
        self.check(
            control_mono < newest.issued_mono + newest.grant.duration_ms,
            "placement_without_item9",
            t,
            f"{where}: horizon reached",
        )

    def liveness(self, heal_ms: int, end_ms: int, assignments: tuple[str, ...]) -> None:
        """Each assignment gets work placed within the bound once the faults heal."""
        if end_ms < heal_ms + LIVENESS_BOUND_MS:
            return
        for assignment_id in assignments:
            times = self.placements.get(assignment_id, [])
            self.check(
                any(heal_ms <= t <= heal_ms + LIVENESS_BOUND_MS for t in times),
                "no_liveness",
                heal_ms + LIVENESS_BOUND_MS,
                f"{assignment_id}: no placement within {LIVENESS_BOUND_MS} ms of healing",
            )
