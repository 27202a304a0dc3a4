"""The Node-side lease machine: `node_step(state, event, now, rules) -> (state, actions)`.

Rules (spec MN0, lease semantics):
- Every grant answers a request with a never-reused requestId (`<boot>-<n>`, a new boot
  prefix after each restart). A retry keeps the requestId and the first-send reading.
- The deadline is first-send + duration - clock error budget (items 2-3). A grant that
  answers no outstanding request, arrives more than the maximum round trip after the first
  send, leaves no positive lifetime, is not above the applied (leaseEpoch, renewalSequence)
  pair or is below the revocation high-water mark is refused; a refusal changes nothing.
- A replay (same requestId and pair as the applied grant) is acknowledged and changes
  nothing (item 7).
- The wall clock is only a tripwire: a wall/monotonic disagreement above the budget since
  the last accepted grant, or a resume, expires the lease at once (item 6). A later grant
  makes the lease valid again but never cancels a stop or revives a stopped worker.
- At the deadline: admit nothing, stop; stopped only once cleanup is confirmed (item 8).
- Without a suspend-aware monotonic source the Node refuses every grant (item 5).

The table maps (phase, event type) to a handler; a missing pair is ignored and says so.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from ._bounds import CLOCK_ERROR_BUDGET_MS, MAX_ROUND_TRIP_MS
from ._evolve import evolve
from ._node_types import (
    CleanupConfirmed,
    GrantApplied,
    GrantArrived,
    GrantRefused,
    GrantReplayed,
    HostResumed,
    Ignored,
    Launch,
    NodeAction,
    NodeEvent,
    NodeLeaseState,
    NodePhase,
    Outstanding,
    Reading,
    ReportNow,
    SendRequest,
    StartExecution,
    StopExecution,
    Wake,
    WorkAdmitted,
    WorkArrived,
    WorkRefused,
)
from ._rules import RULES, LeaseRules
from ._schemas import MachineLeaseGrant, MachineLeaseReport, MachineLeaseRequest

RENEW_BEFORE_MS = 15_000
"""Node policy (default of `NodeLeaseState.renew_before_ms`): ask for a renewal once the
local lease has this much left."""

RENEW_SPACING_MS = 5_000
"""Node policy: never ask for a renewal sooner than this after applying a grant."""

RETRY_INTERVAL_MS = 1_000
"""Node policy: resend an unanswered request (same requestId) this often."""

Step = tuple[NodeLeaseState, tuple[NodeAction, ...]]
Handler = Callable[[NodeLeaseState, NodeEvent, Reading, LeaseRules], Step]
P = NodePhase


def node_observe(state: NodeLeaseState, now: Reading) -> Step:
    """Apply what time alone decides: the tripwire and the deadline. Idempotent."""
    if state.tripwire is not None:
        wall0, mono0 = state.tripwire
        if abs((now.wall - wall0) - (now.mono - mono0)) > CLOCK_ERROR_BUDGET_MS:
            return _expire(state, now, "wall_monotonic_disagreement")
    if state.phase is P.RUNNING and not state.lease_valid(now.mono):
        return _expire(state, now, "deadline")
    return state, ()


def node_step(
    state: NodeLeaseState, event: NodeEvent, now: Reading, rules: LeaseRules = RULES
) -> Step:
    """Observe the time, then apply `event` through the table."""
    state, first = node_observe(state, now)
    handler = _TABLE.get((state.phase, type(event)))
    if handler is None:
        return state, (*first, Ignored(state.phase, type(event).__name__))
    state, actions = handler(state, event, now, rules)
    return state, first + actions


def node_restarted(state: NodeLeaseState, boot: str) -> Step:
    """The Node process restarted with its durable state: readings taken before are void.

    A running or stopping execution is swept (stop, then confirm); an unstarted one is
    stopped; an outstanding request is forgotten, so its grant will be refused (item 5).
    """
    state = evolve(state, boot=boot, next_request=1, outstanding=None, tripwire=None, expired=True)
    if state.phase in (P.RUNNING, P.STOPPING):
        state = evolve(state, phase=P.STOPPING, stop_started_ms=None)
        return state, (StopExecution(state.lease_epoch, "restart"), ReportNow())
    if state.phase is P.STARTING:
        return evolve(state, phase=P.STOPPED), (ReportNow(),)
    return state, ()


def node_report(state: NodeLeaseState, now: Reading) -> MachineLeaseReport | None:
    """The report for this assignment, or None before any launch."""
    if state.phase is P.IDLE:
        return None
    return MachineLeaseReport(
        assignment_id=state.assignment_id,
        lease_epoch=state.lease_epoch,
        phase=state.phase.value,
        applied_request_id=state.applied_request_id,
        applied_renewal_sequence=None if state.applied_pair is None else state.applied_pair[1],
        observed_revocation_revision=state.revocation_high_water,
        spool=state.spool.status(now.mono),
    )


def _expire(state: NodeLeaseState, now: Reading, reason: str) -> Step:
    state = evolve(state, expired=True, tripwire=None)
    if state.phase is P.RUNNING:
        state = evolve(state, phase=P.STOPPING, stop_started_ms=now.mono)
        return state, (StopExecution(state.lease_epoch, reason), ReportNow())
    return state, ()


def _new_request(state: NodeLeaseState, now: Reading, kind: str) -> Step:
    request = MachineLeaseRequest(
        request_id=f"{state.boot}-{state.next_request}",
        node_id=state.node_id,
        assignment_id=state.assignment_id,
        lease_epoch=state.lease_epoch,
        kind="acquire" if kind == "acquire" else "renew",
    )
    state = evolve(
        state,
        next_request=state.next_request + 1,
        outstanding=Outstanding(request, now.mono, now.mono),
    )
    return state, (SendRequest(request, retry=False),)


def _launch(state: NodeLeaseState, event: NodeEvent, now: Reading, rules: LeaseRules) -> Step:
    assert isinstance(event, Launch)
    if event.lease_epoch <= state.lease_epoch:
        return state, ()  # a duplicate or an older launch: epochs are never reused
    state = evolve(
        state,
        lease_epoch=event.lease_epoch,
        phase=P.STARTING,
        outstanding=None,
        expired=True,
        tripwire=None,
        stop_started_ms=None,
    )
    if not state.suspend_aware:
        return evolve(state, phase=P.STOPPED), (ReportNow(),)
    state, actions = _new_request(state, now, "acquire")
    return state, (*actions, ReportNow())


def _wake(state: NodeLeaseState, event: NodeEvent, now: Reading, rules: LeaseRules) -> Step:
    pending = state.outstanding
    if pending is not None and now.mono - pending.first_send_ms > MAX_ROUND_TRIP_MS:
        state, pending = evolve(state, outstanding=None), None  # any answer is late now
    if pending is not None:
        if now.mono - pending.last_send_ms < RETRY_INTERVAL_MS:
            return state, ()
        retry = evolve(pending, last_send_ms=now.mono)
        return evolve(state, outstanding=retry), (SendRequest(pending.request, retry=True),)
    if not state.suspend_aware:
        return state, ()
    if state.phase is P.STARTING:
        return _new_request(state, now, "acquire")
    if (
        state.deadline_ms is not None
        and state.deadline_ms - now.mono <= state.renew_before_ms
        and (state.applied_ms is None or now.mono - state.applied_ms >= RENEW_SPACING_MS)
    ):
        return _new_request(state, now, "renew")
    return state, ()


def _grant(state: NodeLeaseState, event: NodeEvent, now: Reading, rules: LeaseRules) -> Step:
    assert isinstance(event, GrantArrived)
    grant = event.grant
    if grant.request_id == state.applied_request_id and grant.pair == state.applied_pair:
        return state, (GrantReplayed(grant.request_id),)
    reason = _refusal(state, grant, now)
    if reason is not None:
        return state, (GrantRefused(grant.request_id, reason),)
    assert state.outstanding is not None
    anchor = rules.deadline_anchor(state.outstanding.first_send_ms, now.mono)
    deadline = anchor + grant.duration_ms - CLOCK_ERROR_BUDGET_MS
    if deadline - now.mono <= 0:
        return state, (GrantRefused(grant.request_id, "no_remaining_lifetime"),)
    state = evolve(
        state,
        outstanding=None,
        deadline_ms=deadline,
        expired=False,
        applied_pair=grant.pair,
        applied_request_id=grant.request_id,
        revocation_high_water=max(state.revocation_high_water, grant.revocation_revision),
        tripwire=(now.wall, now.mono),
        applied_ms=now.mono,
        spool=state.spool.acknowledge(grant.acknowledged_through),
    )
    actions: tuple[NodeAction, ...] = (GrantApplied(grant.request_id, grant.pair, deadline),)
    if state.phase is P.STARTING:
        state = evolve(state, phase=P.RUNNING)
        actions += (StartExecution(state.lease_epoch),)
    return state, (*actions, ReportNow())


def _refusal(state: NodeLeaseState, grant: MachineLeaseGrant, now: Reading) -> str | None:
    pending = state.outstanding
    if not state.suspend_aware:
        return "no_suspend_aware_monotonic"
    if grant.assignment_id != state.assignment_id or grant.lease_epoch != state.lease_epoch:
        return "wrong_assignment_or_epoch"
    if pending is None or pending.request.request_id != grant.request_id:
        return "unmatched"
    if now.mono - pending.first_send_ms > MAX_ROUND_TRIP_MS:
        return "late"
    if state.applied_pair is not None and grant.pair <= state.applied_pair:
        return "out_of_order"
    if grant.revocation_revision < state.revocation_high_water:
        return "revoked"
    return None


def _work(state: NodeLeaseState, event: NodeEvent, now: Reading, rules: LeaseRules) -> Step:
    assert isinstance(event, WorkArrived)
    if event.lease_epoch != state.lease_epoch:
        return state, (WorkRefused(event.work_id, "wrong_epoch"),)
    if not state.lease_valid(now.mono):
        return state, (WorkRefused(event.work_id, "lease_not_valid"),)
    if state.spool.admission(now.mono) == "stopped":
        return state, (WorkRefused(event.work_id, "spool_admission_stopped"),)
    spool = state.spool.append(event.size, now.mono)
    return evolve(state, spool=spool), (WorkAdmitted(event.work_id, spool.last_sequence),)


def _refuse_work(state: NodeLeaseState, event: NodeEvent, now: Reading, rules: LeaseRules) -> Step:
    assert isinstance(event, WorkArrived)
    return state, (WorkRefused(event.work_id, f"phase_{state.phase.value}"),)


def _noop(state: NodeLeaseState, event: NodeEvent, now: Reading, rules: LeaseRules) -> Step:
    return state, ()


def _resumed(state: NodeLeaseState, event: NodeEvent, now: Reading, rules: LeaseRules) -> Step:
    return _expire(state, now, "resume")


def _cleaned(state: NodeLeaseState, event: NodeEvent, now: Reading, rules: LeaseRules) -> Step:
    assert isinstance(event, CleanupConfirmed)
    if event.lease_epoch != state.lease_epoch:
        return state, ()
    return evolve(state, phase=P.STOPPED, stop_started_ms=None), (ReportNow(),)


_TABLE: Mapping[tuple[NodePhase, type], Handler] = {
    (P.IDLE, Launch): _launch,
    (P.STOPPED, Launch): _launch,
    (P.STARTING, Launch): _launch,
    (P.STARTING, Wake): _wake,
    (P.RUNNING, Wake): _wake,
    (P.IDLE, Wake): _noop,
    (P.STOPPING, Wake): _noop,
    (P.STOPPED, Wake): _noop,
    **{(phase, GrantArrived): _grant for phase in P},
    (P.RUNNING, WorkArrived): _work,
    **{(phase, WorkArrived): _refuse_work for phase in P if phase is not P.RUNNING},
    (P.RUNNING, HostResumed): _resumed,
    (P.STARTING, HostResumed): _resumed,
    (P.STOPPING, HostResumed): _noop,
    (P.STOPPED, HostResumed): _noop,
    (P.IDLE, HostResumed): _noop,
    (P.STOPPING, CleanupConfirmed): _cleaned,
}
"""(phase, event) -> handler. Launch while running or stopping is absent on purpose: the
Node never runs two epochs of one assignment, whatever Control says."""
