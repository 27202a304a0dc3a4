"""The named lease fixtures (spec MN0, items 1-10), with the spec's own numbers.

Each replays one example through the pure machines (`Duo`), or through the whole harness
where the point is an interaction of faults; each states what must hold.
"""

from __future__ import annotations

import attrs

from supervision.leases import (
    CLOCK_ERROR_BUDGET_MS,
    ControlPhase,
    Discontinuity,
    Fence,
    GrantApplied,
    GrantArrived,
    GrantRefused,
    GrantReplayed,
    HostResumed,
    Launch,
    LaunchAssignment,
    MachineLeaseRequest,
    NodeLeaseState,
    NodePhase,
    RequestArrived,
    RequestRefused,
    SendGrant,
    StopExecution,
    Tick,
    Wake,
    WorkArrived,
    control_restarted,
    new_control,
    node_restarted,
)
from supervision.leases import CleanupConfirmed as Cleaned
from supervision.leases._schemas import _timestamp_ms

from ._duo import Duo, Expect, S
from ._model import ClockSpec, Fault, FaultKind, Scenario
from ._runner import run_scenario


def _refusal(actions: tuple[object, ...]) -> str | None:
    return next((a.reason for a in actions if isinstance(a, GrantRefused)), None)


def _running(duo: Duo, ttl_ms: int = 30 * S) -> None:
    """Launch at 0, grant issued at 1 s, applied at 1.1 s, reported at 1.2 s."""
    request = duo.launch(0)
    grant = duo.issue(request, 1 * S, ttl_ms)
    duo.node_do(GrantArrived(grant), 1_100)
    duo.status(1_200)


def delayed_delivery(expect: Expect) -> None:
    """A Node 10 s behind hears a grant 12 s late: refused, the earlier deadline stands."""
    duo = Duo(node_wall_offset_ms=-10 * S)
    _running(duo)
    expect.equal(duo.node.deadline_ms, 28 * S, "deadline = first send 0 + 30 - 2")
    renewal = duo.request_of(duo.node_do(Wake(), 13 * S))
    grant = duo.issue(renewal, 13 * S, 30 * S)
    arrived = 25 * S  # 12 s after Control sent it
    wall_age = duo.n_now(arrived).wall - _timestamp_ms(grant.issued_at)
    naive_end = arrived + grant.duration_ms - wall_age - CLOCK_ERROR_BUDGET_MS
    expect.equal(wall_age, 2 * S, "a one-way timestamp makes the grant look 2 s old")
    expect.equal(naive_end - (13 * S + 30 * S), 8 * S, "one-way reading outlives Control by 8 s")
    before = duo.node
    actions = duo.node_do(GrantArrived(grant), arrived)
    expect.equal(_refusal(actions), "late", "a grant slower than the round trip is refused")
    expect.equal(duo.node.deadline_ms, 28 * S, "the refusal leaves the earlier deadline")
    expect(duo.node == before, "the refusal changed the Node")
    clocks = (("n1", ClockSpec(wall_offset_ms=-10 * S)),)
    delay = Fault(20 * S, FaultKind.DELAY, "control>n1", 60 * S, 12 * S)
    result, _ = run_scenario(
        Scenario(
            nodes=("n1",), clocks=clocks, faults=(delay,), heal_ms=80 * S, duration_ms=260 * S
        ),
        seed=1,
        trace=True,
    )
    expect(not result.violations, f"harness: {result.violations[:3]}")
    expect(any("reason='late'" in line for line in result.trace), "harness: late grants refused")


def unmatched_grant(expect: Expect) -> None:
    """A grant that answers no outstanding request is refused and changes nothing."""
    duo = Duo()
    request = duo.launch(0)
    stray = attrs.evolve(duo.issue(request, 1 * S, 30 * S), request_id="n1.b1-99")
    before = duo.node
    expect.equal(_refusal(duo.node_do(GrantArrived(stray), 1_100)), "unmatched", "stray id")
    expect(duo.node == before, "the refusal changed the Node")
    duo2 = Duo()
    request = duo2.launch(0)
    grant = duo2.issue(request, 1 * S, 30 * S)
    duo2.node, _ = node_restarted(duo2.node, "n1.b2")
    actions = duo2.node_do(GrantArrived(grant), 1_100)
    expect.equal(_refusal(actions), "unmatched", "a restart between send and receive refuses")
    expect(duo2.node.deadline_ms is None, "no lease after a restart between send and receive")


def retry_anchor(expect: Expect) -> None:
    """A retry keeps its requestId and the first-send reading: the deadline is 0 + 30 - 2."""
    duo = Duo()
    first = duo.launch(0)
    retries = [duo.request_of(duo.node_do(Wake(), t)) for t in (1 * S, 2 * S)]
    expect(all(r.request_id == first.request_id for r in retries), "a retry reuses its id")
    grant = duo.issue(first, 500, 30 * S)
    again = duo.control_do(RequestArrived(retries[-1], 30 * S), 2_100)
    expect(
        any(isinstance(a, SendGrant) and a.duplicate and a.grant == grant for a in again),
        "Control answers the retry with the grant it issued to the first send",
    )
    duo.node_do(GrantArrived(grant), 3 * S)
    expect.equal(duo.node.deadline_ms, 28 * S, "deadline anchored at the first send")
    deadline, horizon = duo.node.deadline_ms, duo.horizon
    expect(deadline is not None and horizon is not None and deadline <= horizon, "in horizon")


def replay(expect: Expect) -> None:
    """The same grant delivered again is acknowledged and never moves the deadline."""
    duo = Duo()
    request = duo.launch(0)
    grant = duo.issue(request, 1 * S, 30 * S)
    duo.node_do(GrantArrived(grant), 1_100)
    before = duo.node
    actions = duo.node_do(GrantArrived(grant), 6 * S)
    expect(any(isinstance(a, GrantReplayed) for a in actions), "a replay is acknowledged")
    expect(duo.node == before, "a replay changed the Node")
    expect.equal(duo.node.deadline_ms, 28 * S, "the deadline is not recomputed")


def renewal_order(expect: Expect) -> None:
    """Grants apply in (leaseEpoch, renewalSequence) order above the revocation mark."""
    duo = Duo()
    _running(duo)
    renewal = duo.request_of(duo.node_do(Wake(), 13 * S))
    second = duo.issue(renewal, 13 * S, 30 * S)
    duo.node_do(GrantArrived(second), 13_100)
    expect.equal(duo.node.applied_pair, (1, 2), "applied (1, 2)")
    third = duo.request_of(duo.node_do(Wake(), 27 * S))
    cases = {
        "equal pair under another requestId": (
            attrs.evolve(second, request_id=third.request_id),
            "out_of_order",
        ),
        "lower pair": (
            attrs.evolve(second, request_id=third.request_id, renewal_sequence=1),
            "out_of_order",
        ),
    }
    for what, (grant, reason) in cases.items():
        before = duo.node
        expect.equal(_refusal(duo.node_do(GrantArrived(grant), 27_100)), reason, what)
        expect(duo.node == before, f"{what}: changed the Node")
    duo.node = attrs.evolve(duo.node, revocation_high_water=1)
    low = attrs.evolve(second, request_id=third.request_id, renewal_sequence=3)
    expect.equal(_refusal(duo.node_do(GrantArrived(low), 27_200)), "revoked", "below the mark")
    good = attrs.evolve(low, revocation_revision=1)
    applied = duo.node_do(GrantArrived(good), 27_300)
    expect(any(isinstance(a, GrantApplied) for a in applied), "the next pair applies")


def control_clock_step(expect: Expect) -> None:
    """Control's wall clock stepped 10 s forward never makes expiry earlier: the horizon
    stays at 31 until the disagreement is seen, then moves later and blocks placement."""
    duo = Duo()
    _running(duo)
    expect.equal(duo.blockers(2 * S), (), "placement allowed before the step")
    duo.control_wall_offset_ms = 10 * S
    issued = duo.control.assignments["a1"].grants[-1].grant
    wall_expiry_t = _timestamp_ms(issued.expires_at) - duo.c_now(0).wall
    expect.equal(wall_expiry_t, 21 * S, "a wall-clock reading would expire the lease at t=21")
    expect.equal(duo.node.deadline_ms, 28 * S, "while the Node runs to t=28")
    expect.equal(duo.horizon, 31 * S, "the monotonic horizon stays at t=31")
    duo.control_do(Tick(), 6 * S)
    expect.equal(duo.horizon, 66 * S, "detected: every horizon moves to now + maximum TTL")
    expect("barrier" in duo.blockers(6 * S), "detected: a placement barrier stands")
    result, _ = run_scenario(
        Scenario(
            faults=(Fault(30 * S, FaultKind.WALL_STEP, "control", 0, 10 * S),),
            heal_ms=31 * S,
            duration_ms=200 * S,
        ),
        seed=2,
    )
    expect(not result.violations, f"harness: {result.violations[:3]}")


def shorter_renewal_lost(expect: Expect) -> None:
    """A lost 27 s renewal at t=0.5 after a 30 s grant at t=0 leaves the horizon at 30."""
    duo = Duo()
    request = duo.launch(0)
    grant = duo.issue(request, 0, 30 * S)
    duo.node_do(GrantArrived(grant), 100)
    renewal = MachineLeaseRequest("n1.b1-77", "n1", "a1", 1, "renew")
    duo.issue(renewal, 500, 27 * S)  # its response is lost
    expect.equal(duo.horizon, 30 * S, "the horizon stays at the 30 s grant's, not 27.5")
    expect(
        duo.node.deadline_ms is not None and duo.node.deadline_ms <= 30 * S,
        "the Node's deadline (28) stays within it",
    )
    duo.control, _ = control_restarted(duo.control, duo.c_now(10 * S))
    expect.equal(duo.horizon, 70 * S, "a discontinuity waits the full maximum TTL")


def grant_response_lost(expect: Expect) -> None:
    """After a discontinuity, a fresh grant whose response is lost, beside an old running
    report, keeps placement blocked until a report confirms the fresh grant."""
    duo = Duo()
    _running(duo)
    duo.control, _ = control_restarted(duo.control, duo.c_now(5 * S))
    renewal = duo.request_of(duo.node_do(Wake(), 13 * S))
    fresh = duo.issue(renewal, 13 * S, 30 * S)  # lost on the way back
    duo.status(14 * S)
    blocked = duo.blockers(14 * S)
    expect("barrier" in blocked and "newest_grant_unconfirmed" in blocked, f"blocked {blocked}")
    retry = duo.request_of(duo.node_do(Wake(), 14_500))
    resent = duo.control_do(RequestArrived(retry, 30 * S), 14_600)
    expect(any(isinstance(a, SendGrant) and a.grant == fresh for a in resent), "same grant")
    duo.node_do(GrantArrived(fresh), 14_700)
    duo.status(14_800)
    expect.equal(duo.blockers(15 * S), (), "the confirming running report clears the barrier")


def stale_report(expect: Expect) -> None:
    """A running report naming an older request or sequence does not confirm the newest."""
    duo = Duo()
    _running(duo)
    renewal = duo.request_of(duo.node_do(Wake(), 13 * S))
    newest = duo.issue(renewal, 13 * S, 30 * S)
    duo.status(13_100)  # still names the first grant
    expect("newest_grant_unconfirmed" in duo.blockers(13_200), "older request blocks")
    mixed = attrs.evolve(duo.node, applied_request_id=newest.request_id)
    duo.node, real = mixed, duo.node
    duo.status(13_300)  # the newest requestId with the older sequence
    expect("newest_grant_unconfirmed" in duo.blockers(13_400), "older sequence blocks")
    duo.node = real
    duo.node_do(GrantArrived(newest), 13_500)
    duo.status(13_600)
    expect.equal(duo.blockers(13_700), (), "the exact grant confirms")


def suspend_resume(expect: Expect) -> None:
    """A resume (or a wall/monotonic disagreement) expires the lease at once; a later grant
    never revives the stopped worker; without a suspend-aware clock nothing is admitted."""
    duo = Duo()
    _running(duo)
    renewal = duo.request_of(duo.node_do(Wake(), 13 * S))
    actions = duo.node_do(HostResumed(), 14 * S)
    expect(any(isinstance(a, StopExecution) for a in actions), "a resume starts the stop")
    expect.equal(duo.node.phase, NodePhase.STOPPING, "stopping")
    late = duo.issue(renewal, 13 * S, 30 * S)
    duo.node_do(GrantArrived(late), 14_100)
    expect.equal(duo.node.phase, NodePhase.STOPPING, "a later grant never cancels the stop")
    work = duo.node_do(WorkArrived("w1", 1), 14_200)
    expect(all(type(a).__name__ != "WorkAdmitted" for a in work), "no work while stopping")
    duo.node_do(Cleaned(1), 15 * S)
    expect.equal(duo.node.phase, NodePhase.STOPPED, "stopped once cleanup is confirmed")
    trip = Duo()
    _running(trip)
    trip.node_wall_offset_ms = 3 * S  # the wall jumped 3 s against the monotonic clock
    trip.node_do(Wake(), 5 * S)
    expect.equal(trip.node.phase, NodePhase.STOPPING, "the tripwire expires the lease")
    blind = Duo(
        node=NodeLeaseState(node_id="n1", assignment_id="a1", boot="n1.b1", suspend_aware=False)
    )
    blind.status(0)
    blind.control_do(Tick(), 0)
    blind.node_do(Launch(1), 0)
    expect.equal(blind.node.phase, NodePhase.STOPPED, "a Node without it admits no work")
    forged = MachineLeaseRequest("n1.b1-1", "n1", "a1", 1, "acquire")
    unaware = Duo(control=new_control("ctl", ("a1",), ("n1",), suspend_aware=False))
    refused = unaware.control_do(RequestArrived(forged, 30 * S), 0)
    expect(any(isinstance(a, RequestRefused) for a in refused), "Control without it grants nothing")
    result, _ = run_scenario(
        Scenario(
            faults=(Fault(40 * S, FaultKind.SUSPEND, "n1", 40 * S),),
            heal_ms=81 * S,
            duration_ms=260 * S,
        ),
        seed=3,
    )
    expect(not result.violations, f"harness: {result.violations[:3]}")


def placement_validity(expect: Expect) -> None:
    """Item 9: each condition alone blocks placement; item 10: expiry alone never
    launches a replacement, a stopped report does."""
    base = Duo()
    _running(base)
    expect.equal(base.blockers(2 * S), (), "every condition holds")
    expect("heartbeats_missed" in base.blockers(21_200), "four missed heartbeats block")
    horizon = Duo()
    _running(horizon)
    for t in range(5, 35, 5):
        horizon.status(t * S)
    expect("horizon_reached" in horizon.blockers(31 * S), "a reached horizon blocks")
    ticked = horizon.control_do(Tick(), 32 * S)
    expect(not any(isinstance(a, LaunchAssignment) for a in ticked), "expiry alone: no launch")
    horizon.node_do(Wake(), 32 * S)
    horizon.node_do(Cleaned(1), 33 * S)
    horizon.status(33_100)
    expect.equal(horizon.control.assignments["a1"].phase, ControlPhase.RECONCILED, "reconciled")
    launched = horizon.control_do(Tick(), 34 * S)
    expect(
        any(isinstance(a, LaunchAssignment) and a.lease_epoch == 2 for a in launched),
        "cleanup reconciliation allows the replacement",
    )
    barrier = Duo()
    _running(barrier)
    barrier.control_do(Discontinuity("resume"), 2 * S)
    expect("barrier" in barrier.blockers(2 * S), "a barrier blocks")
    fenced = Duo()
    _running(fenced)
    fenced.control_do(Fence("n1"), 2 * S)
    expect("revoked_or_fenced" in fenced.blockers(2 * S), "a fence blocks")
    stopping = Duo()
    _running(stopping)
    stopping.node_do(HostResumed(), 2 * S)
    stopping.status(2_100)
    expect("newest_grant_unconfirmed" in stopping.blockers(2_200), "a stopping report blocks")


LEASE_FIXTURES = {
    "lease-delayed-delivery": delayed_delivery,
    "lease-unmatched-grant": unmatched_grant,
    "lease-retry-anchor": retry_anchor,
    "lease-replay": replay,
    "lease-renewal-order": renewal_order,
    "lease-control-clock-step": control_clock_step,
    "lease-shorter-renewal-lost": shorter_renewal_lost,
    "lease-grant-response-lost": grant_response_lost,
    "lease-stale-report": stale_report,
    "lease-suspend-resume": suspend_resume,
    "lease-placement-validity": placement_validity,
}
