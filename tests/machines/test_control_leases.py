"""Control's lease machines as the relay runs them (FakeClock, no sockets): the pure MN0
machine per assignment, driven by wire shapes, beside the real-process tests."""

from __future__ import annotations

from actors.machine import AssignmentRow
from actors.machine._control_leases import ControlLeases
from maia.core import FakeClock
from supervision.leases import (
    EvidenceSpool,
    LaunchAssignment,
    MachineLeaseReport,
    MachineLeaseRequest,
    NodeStatus,
    RegistrationRecord,
    RequestRefused,
    SendGrant,
)

M, A = "machine_" + "a" * 32, "assignment_" + "b" * 32


def _row(epoch: int = 0, sequence: int = 1, phase: str = "unplaced") -> AssignmentRow:
    return AssignmentRow(A, M, "project_x", epoch, sequence, phase, 1, 0, 0)


def _running(request_id: str, sequence: int, report: int, epoch: int = 1) -> NodeStatus:
    spool = EvidenceSpool(f"{M}.{A}").status(0)
    return NodeStatus(M, 1, report, (MachineLeaseReport(A, epoch, "running", request_id,
                                                        sequence, 0, spool),))  # fmt: skip


def _placed(leases: ControlLeases, clock: FakeClock) -> str:
    """Launch, heartbeat, acquire, confirm: the request ID of the confirmed grant."""
    leases.status(NodeStatus(M, 1, 1, ()))
    [(_, launch)] = leases.tick()
    assert isinstance(launch, LaunchAssignment)
    assert launch.lease_epoch == 1
    [grant] = leases.request(MachineLeaseRequest("b-1", M, A, 1, "acquire"))
    assert isinstance(grant, SendGrant)
    leases.status(_running("b-1", 1, 2))
    return "b-1"


def test_placement_needs_a_confirmed_grant() -> None:
    """A fresh assignment is blocked until a running report confirms the newest grant; a
    renewal's grant blocks it again until it is confirmed (spec MN0 item 9)."""
    clock = FakeClock()
    leases = ControlLeases("node_c", clock)
    leases.add(_row(), RegistrationRecord(M))
    assert leases.blockers(A) == ("not_active",)  # not launched yet
    _placed(leases, clock)
    assert leases.blockers(A) == ()
    [renewal] = leases.request(MachineLeaseRequest("b-2", M, A, 1, "renew"))
    assert isinstance(renewal, SendGrant)
    assert leases.blockers(A) == ("newest_grant_unconfirmed",)
    leases.status(_running("b-1", 1, 3))  # a stale report names the older grant
    assert leases.blockers(A) == ("newest_grant_unconfirmed",)
    leases.status(_running("b-2", 2, 4))
    assert leases.blockers(A) == ()


def test_unknown_assignment_epoch_or_request_changes_nothing() -> None:
    """A request for another assignment or epoch is refused; a report naming an unknown
    assignment leaves the lease as it was."""
    clock = FakeClock()
    leases = ControlLeases("node_c", clock)
    leases.add(_row(), RegistrationRecord(M))
    _placed(leases, clock)
    before = leases.leases[A].state
    [refused] = leases.request(MachineLeaseRequest("x-1", M, "assignment_other", 1, "renew"))
    assert isinstance(refused, RequestRefused)
    assert refused.reason == "unknown"
    [wrong] = leases.request(MachineLeaseRequest("x-2", M, A, 7, "renew"))
    assert isinstance(wrong, RequestRefused)
    assert wrong.reason == "not_current"
    spool = EvidenceSpool("s").status(0)
    stray = NodeStatus(M, 1, 9, (MachineLeaseReport("assignment_z", 1, "stopped", None, None, 0,
                                                    spool),))  # fmt: skip
    leases.status(stray)
    after = leases.leases[A].state
    assert after.assignments == before.assignments


def test_a_restart_raises_a_barrier_until_a_newer_grant_is_confirmed() -> None:
    """Rebuilt from its row after a Control restart, the assignment keeps its epoch and next
    sequence, stands behind a barrier, and clears it only on a report confirming a grant
    issued after the restart; its horizon is a maximum TTL out (spec MN0 item 4)."""
    clock = FakeClock()
    leases = ControlLeases("node_c", clock)
    leases.restore(_row(epoch=3, sequence=5, phase="active"), RegistrationRecord(M))
    lease = leases.leases[A].state.assignments[A]
    assert lease.barrier == (3, 4)
    assert lease.horizon_ms == clock.monotonic + 60_000
    leases.status(_running("old-9", 4, 1, epoch=3))  # the grant from before the restart
    assert "barrier" in leases.blockers(A)
    [grant] = leases.request(MachineLeaseRequest("new-1", M, A, 3, "renew"))
    assert isinstance(grant, SendGrant)
    assert grant.grant.pair == (3, 5)
    leases.status(_running("new-1", 5, 2, epoch=3))
    assert leases.blockers(A) == ()
    assert [launch for _, launch in leases.tick()] == []  # nothing relaunched
