"""The Control-side lease machine: `control_step(state, event, now, rules) -> (state, actions)`.

Rules (spec MN0, items 4, 9 and 10):
- Durations are enforced on Control's own suspend-aware monotonic clock; without one,
  Control issues no grant. Per assignment one horizon: issue reading + duration, over the
  last confirmed grant and every grant issued since; a later, shorter grant never lowers it.
- A discontinuity (restart, resume, or a wall/monotonic disagreement beyond the clock error
  budget) sets every horizon to now + maximum TTL and raises a placement barrier that only
  a running report confirming a grant issued after it clears.
- Work is placed only while fewer than four heartbeats are missed, the horizon is ahead, no
  barrier, revocation or fence stands, and the Node's last authenticated report is running
  and confirms the newest grant issued (`placement_blockers`).
- A replacement launches only after cleanup reconciliation: the Node reported `stopped` for
  that assignment and epoch. Expiry alone never authorizes one.

`_PHASES` is the per-assignment transition table; a missing pair is no transition.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from maia.core import format_timestamp_ms

from ._bounds import (
    CLOCK_ERROR_BUDGET_MS,
    HEARTBEAT_INTERVAL_MS,
    HEARTBEAT_MISSES,
    MAX_TTL_MS,
    MIN_TTL_MS,
)
from ._control_types import (
    AssignmentLease,
    ControlAction,
    ControlEvent,
    ControlPhase,
    ControlState,
    Discontinuity,
    DiscontinuityRaised,
    Fence,
    IssuedGrant,
    LaunchAssignment,
    NodeRecord,
    PlaceWork,
    RequestArrived,
    RequestRefused,
    RollbackProven,
    SendGrant,
    StatusArrived,
    StatusIgnored,
    Tick,
)
from ._evolve import evolve
from ._node_types import Reading
from ._registration import RegistrationRecord, acknowledge, contradiction
from ._rules import RULES, LeaseRules
from ._schemas import MachineLeaseGrant, MachineLeaseReport

Step = tuple[ControlState, tuple[ControlAction, ...]]
C = ControlPhase

_PHASES: Mapping[tuple[ControlPhase, str], ControlPhase] = {
    (C.UNPLACED, "launch"): C.LAUNCHING,
    (C.RECONCILED, "launch"): C.LAUNCHING,
    (C.LAUNCHING, "reported"): C.ACTIVE,
    (C.ACTIVE, "reported"): C.ACTIVE,
    (C.LAUNCHING, "stopped"): C.RECONCILED,
    (C.ACTIVE, "stopped"): C.RECONCILED,
    # Reachable only through `rules.may_replace` on expiry, which the spec's rule refuses.
    (C.ACTIVE, "launch"): C.LAUNCHING,
    (C.LAUNCHING, "launch"): C.LAUNCHING,
}


def new_control(
    control_node_id: str,
    assignment_ids: tuple[str, ...],
    node_ids: tuple[str, ...],
    *,
    suspend_aware: bool = True,
) -> ControlState:
    """A Control Node with unplaced assignments and fresh registrations."""
    return ControlState(
        control_node_id=control_node_id,
        suspend_aware=suspend_aware,
        assignments={a: AssignmentLease(assignment_id=a) for a in assignment_ids},
        nodes={n: NodeRecord(registration=RegistrationRecord(node_id=n)) for n in node_ids},
    )


def confirms(report: MachineLeaseReport | None, issued: IssuedGrant) -> bool:
    """Item 9: a running report confirms a grant when request, sequence, assignment and
    epoch all match."""
    grant = issued.grant
    return (
        report is not None
        and report.phase == "running"
        and report.applied_request_id == grant.request_id
        and report.applied_renewal_sequence == grant.renewal_sequence
        and report.assignment_id == grant.assignment_id
        and report.lease_epoch == grant.lease_epoch
    )


def placement_blockers(state: ControlState, assignment_id: str, now: Reading) -> tuple[str, ...]:
    """Every item-9 condition that blocks placing work now; empty means placement may go."""
    lease = state.assignments[assignment_id]
    if lease.phase is not C.ACTIVE or lease.node_id is None:
        return ("not_active",)
    return _blockers(lease, state.nodes[lease.node_id], now)


def _blockers(lease: AssignmentLease, node: NodeRecord, now: Reading) -> tuple[str, ...]:
    blockers: list[str] = []
    if node.last_heartbeat_ms is None or (
        (now.mono - node.last_heartbeat_ms) // HEARTBEAT_INTERVAL_MS >= HEARTBEAT_MISSES
    ):
        blockers.append("heartbeats_missed")
    if lease.horizon_ms is None or now.mono >= lease.horizon_ms:
        blockers.append("horizon_reached")
    if lease.barrier is not None:
        blockers.append("barrier")
    if node.fenced or not node.registration.admits:
        blockers.append("revoked_or_fenced")
    if not lease.grants or not confirms(lease.last_report, lease.grants[-1]):
        blockers.append("newest_grant_unconfirmed")
    return tuple(blockers)


REBASELINE_MS = 1_000
"""How often the wall/monotonic baseline moves on: a step shows as a jump between two
baselines, a slow rate error (which is no discontinuity) never accumulates."""


def control_observe(state: ControlState, now: Reading) -> Step:
    """Detect a wall/monotonic disagreement beyond the budget since the baseline."""
    if state.baseline is not None:
        wall0, mono0 = state.baseline
        if abs((now.wall - wall0) - (now.mono - mono0)) > CLOCK_ERROR_BUDGET_MS:
            return _discontinuity(state, Discontinuity("clock_disagreement"), now, RULES)
        if now.mono - mono0 < REBASELINE_MS:
            return state, ()
    return evolve(state, baseline=(now.wall, now.mono)), ()


def control_step(
    state: ControlState, event: ControlEvent, now: Reading, rules: LeaseRules = RULES
) -> Step:
    """Observe the clocks, then apply `event`."""
    state, first = control_observe(state, now)
    state, actions = _HANDLERS[type(event)](state, event, now, rules)
    return state, first + actions


def control_restarted(state: ControlState, now: Reading) -> Step:
    """Control restarted from its durable state: that is a discontinuity."""
    return _discontinuity(evolve(state, baseline=None), Discontinuity("restart"), now, RULES)


def _discontinuity(
    state: ControlState, event: ControlEvent, now: Reading, rules: LeaseRules
) -> Step:
    assert isinstance(event, Discontinuity)
    floor = now.mono + MAX_TTL_MS
    assignments = {
        key: evolve(
            lease,
            horizon_ms=max(floor, lease.horizon_ms or floor),
            floor_ms=floor,
            barrier=max(lease.barrier or (0, 0), (lease.lease_epoch, lease.next_sequence - 1)),
        )
        for key, lease in state.assignments.items()
    }
    state = evolve(state, assignments=assignments, baseline=(now.wall, now.mono))
    return state, (DiscontinuityRaised(event.cause, floor),)


def _refuse(state: ControlState, node_id: str, request_id: str, reason: str) -> Step:
    return state, (RequestRefused(node_id, request_id, reason),)


def _request(state: ControlState, event: ControlEvent, now: Reading, rules: LeaseRules) -> Step:
    assert isinstance(event, RequestArrived)
    request = event.request
    node = state.nodes.get(request.node_id)
    lease = state.assignments.get(request.assignment_id)
    if not state.suspend_aware:
        return _refuse(state, request.node_id, request.request_id, "no_suspend_aware_monotonic")
    if node is None or lease is None:
        return _refuse(state, request.node_id, request.request_id, "unknown")
    if node.fenced or not node.registration.admits:
        return _refuse(state, request.node_id, request.request_id, "revoked_or_fenced")
    if (
        lease.node_id != request.node_id
        or lease.lease_epoch != request.lease_epoch
        or lease.phase not in (C.LAUNCHING, C.ACTIVE)
    ):
        return _refuse(state, request.node_id, request.request_id, "not_current")
    for issued in lease.grants:
        if issued.grant.request_id == request.request_id:  # a retry: the same answer
            return state, (SendGrant(request.node_id, issued.grant, duplicate=True),)
    if not MIN_TTL_MS <= event.duration_ms <= MAX_TTL_MS:
        raise ValueError(f"duration {event.duration_ms} ms is outside the TTL bounds")
    source = f"{request.node_id}.{request.assignment_id}"
    grant = MachineLeaseGrant(
        assignment_id=request.assignment_id,
        lease_epoch=lease.lease_epoch,
        request_id=request.request_id,
        renewal_sequence=lease.next_sequence,
        revocation_revision=node.registration.revocation_revision,
        acknowledged_through=node.registration.acknowledged.get(source, 0),
        issued_at=format_timestamp_ms(now.wall),
        expires_at=format_timestamp_ms(now.wall + event.duration_ms),
    )
    issued = IssuedGrant(grant, now.mono)
    lease = evolve(
        lease,
        next_sequence=lease.next_sequence + 1,
        grants=(*lease.grants, issued),
        horizon_ms=rules.next_horizon(lease.horizon_ms, issued.expiry_ms),
    )
    state = evolve(state, assignments={**state.assignments, lease.assignment_id: lease})
    return state, (SendGrant(request.node_id, grant, duplicate=False),)


def _status(state: ControlState, event: ControlEvent, now: Reading, rules: LeaseRules) -> Step:
    assert isinstance(event, StatusArrived)
    status = event.status
    node = state.nodes.get(status.node_id)
    if node is None or status.registration_incarnation != node.registration.incarnation:
        return state, (StatusIgnored(status.node_id, "unknown_registration"),)
    if status.report_sequence <= node.last_report_sequence:
        return state, (StatusIgnored(status.node_id, "stale_status"),)
    registration = node.registration
    actions: list[ControlAction] = []
    assignments = dict(state.assignments)
    for report in status.reports:
        source = report.spool.source_id
        proof = contradiction(
            registration, report.observed_revocation_revision, {source: report.spool.last_sequence}
        )
        if proof is not None and not registration.recovery_required:
            registration = evolve(registration, recovery_required=True)
            actions.append(RollbackProven(status.node_id, proof))
        registration = acknowledge(registration, source, report.spool.last_sequence)
        lease = assignments.get(report.assignment_id)
        if (
            lease is not None
            and lease.node_id == status.node_id
            and report.lease_epoch == lease.lease_epoch
        ):
            assignments[lease.assignment_id] = _apply_report(lease, report, rules)
    node = evolve(
        node,
        registration=registration,
        last_heartbeat_ms=now.mono,
        last_report_sequence=status.report_sequence,
    )
    state = evolve(state, nodes={**state.nodes, status.node_id: node}, assignments=assignments)
    return state, tuple(actions)


def _apply_report(
    lease: AssignmentLease, report: MachineLeaseReport, rules: LeaseRules
) -> AssignmentLease:
    if lease.phase in (C.UNPLACED, C.RECONCILED):
        return lease
    trigger = "stopped" if report.phase == "stopped" else "reported"
    lease = evolve(lease, phase=_PHASES[(lease.phase, trigger)], last_report=report)
    if trigger == "stopped":  # cleanup reconciliation: nothing of this epoch runs any more
        return evolve(lease, grants=(), previous_node_id=lease.node_id)
    for index, issued in enumerate(lease.grants):
        if confirms(report, issued):
            kept = lease.grants[index:]
            barrier, floor = lease.barrier, lease.floor_ms
            if barrier is not None and rules.barrier_clears(issued.grant.pair, barrier):
                barrier, floor = None, None
            expiries = [g.expiry_ms for g in kept] + ([floor] if floor is not None else [])
            return evolve(
                lease, grants=kept, barrier=barrier, floor_ms=floor, horizon_ms=max(expiries)
            )
    return lease


def _tick(state: ControlState, event: ControlEvent, now: Reading, rules: LeaseRules) -> Step:
    actions: list[ControlAction] = []
    assignments = dict(state.assignments)
    for key in sorted(assignments):
        lease = assignments[key]
        reached = lease.horizon_ms is not None and now.mono >= lease.horizon_ms
        wants = lease.phase in (C.UNPLACED, C.RECONCILED) or (
            lease.phase in (C.ACTIVE, C.LAUNCHING) and lease.lease_epoch > 0 and reached
        )
        reconciled = lease.phase in (C.UNPLACED, C.RECONCILED)
        if wants and rules.may_replace(reconciled, reached):
            target = _choose_node(state, lease, now)
            if target is not None:
                lease = evolve(
                    lease,
                    phase=_PHASES[(lease.phase, "launch")],
                    previous_node_id=lease.node_id or lease.previous_node_id,
                    node_id=target,
                    lease_epoch=lease.lease_epoch + 1,
                    next_sequence=1,
                    grants=(),
                    horizon_ms=None,
                    last_report=None,
                )
                actions.append(
                    LaunchAssignment(target, key, lease.lease_epoch, lease.lease_epoch > 1)
                )
        elif lease.phase is C.LAUNCHING and lease.node_id is not None:
            actions.append(
                LaunchAssignment(lease.node_id, key, lease.lease_epoch, lease.lease_epoch > 1)
            )
        assignments[key] = lease
        if (
            lease.phase is C.ACTIVE
            and lease.node_id is not None
            and not _blockers(lease, state.nodes[lease.node_id], now)
        ):
            work_id = f"{key}.{lease.lease_epoch}.{lease.next_work}"
            actions.append(PlaceWork(lease.node_id, key, lease.lease_epoch, work_id))
            assignments[key] = evolve(lease, next_work=lease.next_work + 1)
    return evolve(state, assignments=assignments), tuple(actions)


def _choose_node(state: ControlState, lease: AssignmentLease, now: Reading) -> str | None:
    """A reachable, admitted Node, preferring one other than the last holder."""
    fresh = [
        node_id
        for node_id, node in sorted(state.nodes.items())
        if node.registration.admits
        and not node.fenced
        and node.last_heartbeat_ms is not None
        and (now.mono - node.last_heartbeat_ms) // HEARTBEAT_INTERVAL_MS < HEARTBEAT_MISSES
    ]
    last = lease.node_id or lease.previous_node_id
    others = [node_id for node_id in fresh if node_id != last]
    choices = others or fresh
    return choices[0] if choices else None


def _fence(state: ControlState, event: ControlEvent, now: Reading, rules: LeaseRules) -> Step:
    assert isinstance(event, Fence)
    node = state.nodes.get(event.node_id)
    if node is None:
        return state, ()
    nodes = {**state.nodes, event.node_id: evolve(node, fenced=True)}
    return evolve(state, nodes=nodes), ()


def set_registration(state: ControlState, record: RegistrationRecord) -> ControlState:
    """Replace one registration (rotation, revocation, restore, fresh enrollment)."""
    node = state.nodes[record.node_id]
    nodes = {**state.nodes, record.node_id: evolve(node, registration=record)}
    return evolve(state, nodes=nodes)


_HANDLERS: Mapping[type, Callable[[ControlState, ControlEvent, Reading, LeaseRules], Step]] = {
    RequestArrived: _request,
    StatusArrived: _status,
    Tick: _tick,
    Discontinuity: _discontinuity,
    Fence: _fence,
}
