"""The assignment actor's pure core (FakeClock, no trio, no storage): the MN0 Control lease
machine of one assignment, driven by wire shapes, and the row events each step must write
before its frame goes out; beside the real-process tests of the actor."""

from __future__ import annotations

from typing import Literal

import attrs

from actors.machine import (
    ASSIGNMENT_TABLE,
    EXPIRY_GRACE_MS,
    AssignmentEvent,
    AssignmentRow,
    AssignmentState,
    Plan,
    decide,
    expired,
    fresh,
    new_assignment,
    restart_barrier,
    restore,
    wakes,
)
from maia.core import FakeClock
from supervision.leases import (
    MAX_ROUND_TRIP_MS,
    MAX_TTL_MS,
    STOP_BOUND_MS,
    ControlEvent,
    ControlState,
    EvidenceSpool,
    LaunchAssignment,
    MachineLeaseReport,
    MachineLeaseRequest,
    NodeStatus,
    Reading,
    RegistrationRecord,
    RequestArrived,
    RequestRefused,
    SendGrant,
    StatusArrived,
    Tick,
    placement_blockers,
)

M = "machine_" + "a" * 32
Kind = Literal["acquire", "renew"]
GRANT_MS = 30_000


@attrs.define
class One:
    """One assignment as its actor holds it: the row (moved by the table) and the machine."""

    clock: FakeClock
    row: AssignmentRow
    state: ControlState

    @property
    def id(self) -> str:
        return self.row.assignment_id

    def now(self) -> Reading:
        return one_now(self.clock)

    def step(self, event: ControlEvent) -> Plan:
        plan = decide(self.row, self.state, event, self.now())
        at = self.row.state
        for table_event in plan.events:  # what the write path's table walk does
            at = ASSIGNMENT_TABLE.step(at, table_event, caller="node").target
        assert at is plan.row.state
        self.row = attrs.evolve(plan.row, revision=self.row.revision + len(plan.events))
        self.state = plan.state
        return plan

    def request(self, request_id: str, kind: Kind = "renew", epoch: int = 1) -> Plan:
        return self.step(RequestArrived(MachineLeaseRequest(request_id, M, self.id, epoch,
                                                            kind), GRANT_MS))  # fmt: skip

    def status(self, sequence: int, *reports: MachineLeaseReport) -> Plan:
        return self.step(StatusArrived(NodeStatus(M, 1, sequence, reports)))

    def running(self, request_id: str, renewal: int, epoch: int = 1) -> MachineLeaseReport:
        spool = EvidenceSpool(f"{M}.{self.id}").status(0)
        return MachineLeaseReport(self.id, epoch, "running", request_id, renewal, 0, spool)

    def blockers(self) -> tuple[str, ...]:
        return placement_blockers(self.state, self.id, self.now())


def barrier_of(one: One) -> tuple[int, int] | None:
    return one.row.barrier


def one_now(clock: FakeClock) -> Reading:
    return Reading(wall=clock.wall_ms(), mono=clock.monotonic_ms())


def _new(clock: FakeClock) -> One:
    row = attrs.evolve(new_assignment(M, "project_x", 0), revision=1)
    return One(clock, row, fresh("node_c", row, RegistrationRecord(M)))


def _placed(one: One) -> None:
    """Heartbeat, launch, acquire, confirm."""
    one.status(1)
    plan = one.step(Tick())
    assert [type(a) for a in plan.actions if isinstance(a, LaunchAssignment)] == [LaunchAssignment]
    grant = one.request("b-1", "acquire")
    assert isinstance(grant.actions[0], SendGrant)
    one.status(2, one.running("b-1", 1))


def test_each_step_names_the_row_events_written_before_its_frame() -> None:
    """A launch writes its new epoch (launching), a grant its next renewal sequence (active),
    a `stopped` report reconciles the row; a duplicate request writes nothing."""
    one = _new(FakeClock())
    assert one.status(1).events == ()
    launch = one.step(Tick())
    assert launch.events == (AssignmentEvent.LAUNCH,)
    assert (one.row.state, one.row.lease_epoch, one.row.next_sequence) == (
        AssignmentState.LAUNCHING, 1, 1)  # fmt: skip
    grant = one.request("b-1", "acquire")
    assert grant.events == (AssignmentEvent.GRANT,)
    assert (one.row.state, one.row.next_sequence) == (AssignmentState.ACTIVE, 2)
    again = one.request("b-1", "acquire")  # a retry: the same grant, nothing written
    assert again.events == ()
    assert isinstance(again.actions[0], SendGrant)
    assert again.actions[0].duplicate
    spool = EvidenceSpool(f"{M}.{one.id}").status(0)
    stopped = one.status(2, MachineLeaseReport(one.id, 1, "stopped", None, None, 0, spool))
    assert stopped.events == (AssignmentEvent.STOPPED,)
    assert one.row.state is AssignmentState.RECONCILED
    relaunch = one.step(Tick())  # only after cleanup reconciliation: the next epoch
    assert relaunch.events == (AssignmentEvent.LAUNCH,)
    assert one.row.lease_epoch == 2


def test_placement_needs_a_confirmed_grant() -> None:
    """A fresh assignment is blocked until a running report confirms the newest grant; a
    renewal's grant blocks it again until it is confirmed (spec MN0 item 9)."""
    one = _new(FakeClock())
    assert one.blockers() == ("not_active",)  # not launched yet
    _placed(one)
    assert one.blockers() == ()
    renewal = one.request("b-2")
    assert isinstance(renewal.actions[0], SendGrant)
    assert one.blockers() == ("newest_grant_unconfirmed",)
    one.status(3, one.running("b-1", 1))  # a stale report names the older grant
    assert one.blockers() == ("newest_grant_unconfirmed",)
    one.status(4, one.running("b-2", 2))
    assert one.blockers() == ()


def test_unknown_epoch_or_assignment_changes_nothing() -> None:
    """A request for another epoch is refused `not_current` and writes nothing; a report
    naming an unknown assignment leaves the lease and the row as they were."""
    one = _new(FakeClock())
    _placed(one)
    before, row = one.state.assignments, one.row
    wrong = one.request("x-2", epoch=7)
    assert isinstance(wrong.actions[0], RequestRefused)
    assert wrong.actions[0].reason == "not_current"
    assert wrong.events == ()
    spool = EvidenceSpool("s").status(0)
    stray = one.status(9, MachineLeaseReport("assignment_z", 1, "stopped", None, None, 0, spool))
    assert stray.events == ()
    assert one.state.assignments == before
    assert one.row == row


def test_a_restart_stores_a_barrier_until_a_newer_grant_is_confirmed() -> None:
    """Rebuilt from its row after a Control restart, the assignment keeps its epoch and next
    sequence, stands behind a barrier (the row stores it), its horizon a maximum TTL out;
    only a report confirming a grant issued after the restart clears it, and that step
    writes `confirmed` (spec MN0 item 4). Nothing is relaunched."""
    clock = FakeClock()
    row = AssignmentRow("assignment_" + "b" * 32, M, "project_x", 3, 5, AssignmentState.ACTIVE,
                        1, 0, 0, 4)  # fmt: skip
    row = attrs.evolve(row, barrier=restart_barrier(row))  # the recovery column's write
    assert row.barrier == (3, 4)
    one = One(clock, row, restore("node_c", row, RegistrationRecord(M), one_now(clock)))
    lease = one.state.assignments[one.id]
    assert lease.barrier == (3, 4)
    assert lease.horizon_ms == clock.monotonic + MAX_TTL_MS
    assert wakes(one.row, one.state, one.now())["barrier"] == MAX_TTL_MS
    one.status(1, one.running("old-9", 4, epoch=3))  # the grant from before the restart
    assert "barrier" in one.blockers()
    assert one.row.barrier == (3, 4)
    grant = one.request("new-1", epoch=3)
    assert isinstance(grant.actions[0], SendGrant)
    assert grant.actions[0].grant.pair == (3, 5)
    confirmed = one.status(2, one.running("new-1", 5, epoch=3))
    assert confirmed.events == (AssignmentEvent.CONFIRMED,)
    assert barrier_of(one) is None
    assert one.blockers() == ()
    assert wakes(one.row, one.state, one.now())["barrier"] is None
    assert [a for a in one.step(Tick()).actions if isinstance(a, LaunchAssignment)] == []


def test_a_second_restart_before_confirmation_keeps_the_older_barrier_covered() -> None:
    """A Control that restarts twice before any report confirms a newer grant raises a
    barrier covering every pair issued before either start."""
    row = AssignmentRow("assignment_" + "c" * 32, M, "project_x", 2, 9, AssignmentState.ACTIVE,
                        1, 0, 0, 7, (2, 8))  # fmt: skip
    assert restart_barrier(row) == (2, 8)
    later = attrs.evolve(row, next_sequence=12)  # grants issued between the two starts
    assert restart_barrier(later) == (2, 11)


def test_the_lease_timer_follows_the_horizon() -> None:
    """The `lease` wake is armed at the lease horizon while the assignment runs (it moves
    with each grant) and cancelled once it is reached or the epoch is reconciled."""
    clock = FakeClock()
    one = _new(clock)
    assert wakes(one.row, one.state, one.now()) == {"lease": None, "barrier": None,
                                                     "expiry": None}  # fmt: skip
    _placed(one)
    assert wakes(one.row, one.state, one.now())["lease"] == GRANT_MS
    clock.advance(10_000)
    one.request("b-2")
    assert wakes(one.row, one.state, one.now())["lease"] == GRANT_MS
    clock.advance(GRANT_MS)
    assert wakes(one.row, one.state, one.now())["lease"] is None


def test_the_lease_expires_at_its_horizon_plus_the_nodes_bounded_stop() -> None:
    """Expiry reconciliation (spec MN0 item 10): the `expiry` wake is armed at the horizon
    plus the bounded stop and a round trip, and moves with each grant; `expired` holds from
    then on, never while a report says the Node's stop is still under way (`stopping`: the
    assignment stays uncertain, item 8), nor once a `stopped` report reconciled it. With
    the spec's example (grant issued at t=1, 30 s): Control's expiry t=31, the Node's stop
    ends by t=38, expiry reconciliation at t=46."""
    clock = FakeClock()
    one = _new(clock)
    _placed(one)
    grace = STOP_BOUND_MS + MAX_ROUND_TRIP_MS
    assert grace == EXPIRY_GRACE_MS
    assert wakes(one.row, one.state, one.now())["expiry"] == GRANT_MS + grace
    clock.advance(10_000)
    one.request("b-2")  # a renewal moves the horizon, and the expiry with it
    assert wakes(one.row, one.state, one.now())["expiry"] == GRANT_MS + grace
    clock.advance(GRANT_MS + grace - 1)  # the machine went silent after that renewal
    assert not expired(one.row, one.state, one.now())
    clock.advance(1)
    assert expired(one.row, one.state, one.now())
    assert wakes(one.row, one.state, one.now())["expiry"] is None  # reached: not armed again
    spool = EvidenceSpool(f"{M}.{one.id}").status(0)
    one.status(3, MachineLeaseReport(one.id, 1, "stopping", None, None, 0, spool))
    assert not expired(one.row, one.state, one.now())  # uncertain: only `stopped` ends it
    one.status(4, MachineLeaseReport(one.id, 1, "stopped", None, None, 0, spool))
    assert not expired(one.row, one.state, one.now())  # reconciled by the Node itself
