"""A Hypothesis state machine over the two pure lease machines, with an adversarial network.

Messages between one Control and one Node may be delayed without bound, reordered,
duplicated or dropped; time jumps; either side restarts; the Node's host resumes; Control's
wall clock steps. After every step: the Node's deadline never falls after Control's
horizon; a replay or refusal changes nothing; work is admitted only under a valid lease;
and every placement satisfies item 9 as an independent checker judges it.
"""

from __future__ import annotations

from typing import Any

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from simulations import Checker
from supervision.leases import (
    RULES,
    CleanupConfirmed,
    ControlPhase,
    GrantArrived,
    GrantRefused,
    GrantReplayed,
    HostResumed,
    Launch,
    LaunchAssignment,
    MachineLeaseGrant,
    MachineLeaseRequest,
    NodeLeaseState,
    NodePhase,
    NodeStatus,
    PlaceWork,
    Reading,
    RequestArrived,
    SendGrant,
    SendRequest,
    StatusArrived,
    Tick,
    Wake,
    WorkAdmitted,
    WorkArrived,
    control_observe,
    control_restarted,
    control_step,
    new_control,
    node_observe,
    node_report,
    node_restarted,
    node_step,
)

WALL0 = 1_800_000_000_000
ELAPSE = st.sampled_from([2_500, 300, 6_000, 4_000, 1_500, 0])
"""Time passing before an action: around the 2 s budget and the 5 s round-trip bound."""


class LeasePair(RuleBasedStateMachine):
    lease_rules = RULES

    def __init__(self) -> None:
        super().__init__()
        self.t = 0
        self.control = new_control("ctl", ("a1",), ("n1",))
        self.node = NodeLeaseState(node_id="n1", assignment_id="a1", boot="n1.b1")
        self.boots = 1
        self.control_skew = 0
        self.to_control: list[Any] = []
        self.to_node: list[Any] = []
        self.report_sequence = 0
        self.checker = Checker(seed=0)
        self.work = 0

    @initialize(renew_before=st.sampled_from([15_000, 45_000]), ttl=st.sampled_from([30, 60]))
    def setup(self, renew_before: int, ttl: int) -> None:
        """Start from a confirmed running lease, so every example explores a live one."""
        self.node = NodeLeaseState(
            node_id="n1", assignment_id="a1", boot="n1.b1", renew_before_ms=renew_before
        )
        self.node_acts(0, status=True)  # the heartbeat
        self.control_ticks(0)  # launch
        self.deliver(0, 0, keep=False, ttl=ttl)  # the Node takes the launch, asks
        self.deliver(100, 0, keep=False, ttl=ttl)  # Control grants
        self.deliver(100, 0, keep=False, ttl=ttl)  # the Node applies and runs
        self.node_acts(100, status=True)  # the running report confirms
        assert self.node.phase is NodePhase.RUNNING

    def c_now(self) -> Reading:
        return Reading(self.t, WALL0 + self.t + self.control_skew)

    def n_now(self) -> Reading:
        return Reading(self.t, WALL0 + self.t)

    def _node(self, event: Any) -> None:
        before, _ = node_observe(self.node, self.n_now())
        self.node, actions = node_step(before, event, self.n_now(), self.lease_rules)
        for action in actions:
            if isinstance(action, GrantReplayed | GrantRefused):
                assert self.node == before, f"{action} changed the Node"
            elif isinstance(action, SendRequest):
                self.to_control.append(action.request)
            elif isinstance(action, WorkAdmitted):
                assert self.node.lease_valid(self.t), "work admitted without a valid lease"

    def _control(self, event: Any) -> None:
        now = self.c_now()
        before, observed = control_observe(self.control, now)
        if isinstance(event, StatusArrived):
            self.checker.status_delivered(event.status, now.mono)
        self.control, actions = control_step(before, event, now, self.lease_rules)
        for action in observed + actions:
            if type(action).__name__ == "DiscontinuityRaised":
                self.checker.discontinuity()
            elif isinstance(action, SendGrant):
                if action.duplicate:
                    assert self.control == before, "a duplicate request changed Control"
                else:
                    self.checker.grant_issued(action.grant, now.mono)
                self.to_node.append(action.grant)
            elif isinstance(action, LaunchAssignment):
                self.to_node.append(Launch(action.lease_epoch))
            elif isinstance(action, PlaceWork):
                self.checker.placement(self.t, "n1", "a1", action.lease_epoch, now.mono, True)
                self.to_node.append(WorkArrived(action.work_id, action.lease_epoch))

    @rule(elapse=ELAPSE, status=st.booleans())
    def node_acts(self, elapse: int, status: bool) -> None:
        self.t += elapse
        if status:
            self.report_sequence += 1
            report = node_report(self.node, self.n_now())
            reports = () if report is None else (report,)
            # Statuses go straight to Control: the harness covers their reordering, and here
            # they would crowd the grants and requests whose timing matters.
            self._control(StatusArrived(NodeStatus("n1", 1, self.report_sequence, reports)))
        else:
            self._node(Wake())

    @rule(elapse=ELAPSE)
    def control_ticks(self, elapse: int) -> None:
        self.t += elapse
        self._control(Tick())

    @precondition(lambda self: bool(self.to_control or self.to_node))
    @rule(
        elapse=ELAPSE,
        index=st.integers(0, 30),
        keep=st.booleans(),
        ttl=st.sampled_from([27, 30, 45, 60]),
    )
    def deliver(self, elapse: int, index: int, keep: bool, ttl: int) -> None:
        """Deliver the `index`-th message in flight (a reorder), keeping a copy (a duplicate)."""
        self.t += elapse
        flights = [(self.to_control, m) for m in self.to_control]
        flights += [(self.to_node, m) for m in self.to_node]
        queue, message = flights[index % len(flights)]
        if not keep:
            queue.remove(message)
        if isinstance(message, MachineLeaseRequest):
            self._control(RequestArrived(message, ttl * 1_000))
        elif isinstance(message, NodeStatus):
            self._control(StatusArrived(message))
        elif isinstance(message, MachineLeaseGrant):
            self._node(GrantArrived(message))
        else:
            self._node(message)

    @rule(
        wait=ELAPSE,
        there=ELAPSE,
        back=ELAPSE,
        ttl=st.sampled_from([27, 30, 45, 60]),
        lose=st.booleans(),
    )
    def exchange(self, wait: int, there: int, back: int, ttl: int, lose: bool) -> None:
        """One whole exchange: the Node wakes, its request takes `there`, the grant `back`
        (or is lost); other messages stay in flight."""
        self.t += wait
        self._node(Wake())
        if not self.to_control:
            return
        self.t += there
        request = self.to_control.pop()
        if isinstance(request, MachineLeaseRequest):
            self._control(RequestArrived(request, ttl * 1_000))
        if self.to_node and isinstance(self.to_node[-1], MachineLeaseGrant):
            self.t += back
            grant = self.to_node.pop()
            if not lose:
                self._node(GrantArrived(grant))

    @precondition(lambda self: bool(self.to_node or self.to_control))
    @rule(index=st.integers(0, 30))
    def drop(self, index: int) -> None:
        queue = (
            self.to_node if (index % 2 and self.to_node) or not self.to_control else self.to_control
        )
        queue.pop(index % len(queue))

    @rule()
    def host_resumed(self) -> None:
        self._node(HostResumed())

    @precondition(lambda self: self.node.phase is NodePhase.STOPPING)
    @rule()
    def cleanup_confirmed(self) -> None:
        self._node(CleanupConfirmed(self.node.lease_epoch))

    @rule()
    def control_restarts(self) -> None:
        self.checker.discontinuity()
        self.control, _ = control_restarted(self.control, self.c_now())

    @rule()
    def node_restarts(self) -> None:
        self.boots += 1
        self.node, _ = node_restarted(self.node, f"n1.b{self.boots}")

    @rule(ms=st.sampled_from([-10_000, -1_000, 1_500, 10_000]))
    def control_wall_steps(self, ms: int) -> None:
        self.control_skew += ms

    @invariant()
    def deadline_within_horizon(self) -> None:
        lease = self.control.assignments["a1"]
        node = self.node
        if (
            lease.phase in (ControlPhase.LAUNCHING, ControlPhase.ACTIVE)
            and node.lease_epoch == lease.lease_epoch
            and not node.expired
            and node.deadline_ms is not None
        ):
            assert lease.horizon_ms is not None
            assert node.deadline_ms <= lease.horizon_ms

    @invariant()
    def placements_satisfied_item_9(self) -> None:
        assert not self.checker.violations, self.checker.violations[0]


LeasePair.TestCase.settings = settings(max_examples=150, stateful_step_count=60)
TestLeasePair = LeasePair.TestCase
