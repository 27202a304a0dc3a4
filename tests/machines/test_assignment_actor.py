"""The `MachineAssignmentActor` on the real runtime and a real SQLite file, across two
Control runs of the same database: its row is the durable lifecycle (epoch and sequence
written before the frame goes out), its timers are durable rows, and a Control start
recovers it from storage behind a stored barrier. No sockets: the link is down throughout
(a launch that cannot be sent is sent again by the `reconcile` timer); the real link is in
test_placement_e2e."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import trio

import storage
from actors import WORKERS, ActorRuntime, open_actor_runtime
from actors.machine import (
    MACHINES,
    AssignmentState,
    GrantFrame,
    LaunchAssignmentFrame,
    LeaseRequest,
    Place,
    Status,
    enroll_write,
    get_assignment,
    new_assignment,
)
from maia.config import UserConfig
from maia.core import SystemClock
from supervision.leases import (
    EvidenceSpool,
    MachineLeaseReport,
    MachineLeaseRequest,
    NodeStatus,
)

CLOCK = SystemClock()


class _NoWorkers:
    """The pool's supervisor stand-in: this test launches no worker."""

    def live(self) -> list[Any]:
        return []

    async def stop_all(self, reason: str = "") -> None:
        return None


@asynccontextmanager
async def _control(path: Path) -> AsyncIterator[ActorRuntime]:
    """One Control run: storage and the runtime with the worker pool and the machine kind."""
    async with (
        storage.open_storage(path, clock=CLOCK) as store,
        open_actor_runtime(store, clock=CLOCK, config=UserConfig(), kinds=(WORKERS, MACHINES),
                           options={"worker_supervisor": _NoWorkers()}) as runtime,
    ):  # fmt: skip
        yield runtime


def _rows(path: Path, sql: str) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def _running(machine_id: str, assignment_id: str, sequence: int, request_id: str,
             renewal: int) -> NodeStatus:  # fmt: skip
    spool = EvidenceSpool(f"{machine_id}.{assignment_id}").status(0)
    report = MachineLeaseReport(assignment_id, 1, "running", request_id, renewal, 0, spool)
    return NodeStatus(machine_id, 1, sequence, (report,))


def test_a_control_restart_recovers_the_assignment_behind_a_stored_barrier(
    tmp_path: Path,
) -> None:
    """First run: placed, launched (epoch 1 written, the launch's `reconcile` timer armed
    while the link is down), granted (sequence written, `lease` timer at the horizon).
    Second run on the same file: the recovery column stores barrier (1, 1) and bumps the
    revision; placement is blocked by the barrier, the `barrier` timer is armed; a grant
    issued after the start, once a running report confirms it, clears the barrier in the
    row (`confirmed`) and placement may go."""
    path = tmp_path / "maia.db"

    async def first() -> tuple[str, str]:
        async with _control(path) as runtime:
            now = CLOCK.wall_ms()
            machine, _ = await runtime.store.write(
                lambda c: enroll_write(c, "box", now, "local-user"))  # fmt: skip
            service = runtime[MACHINES]
            made = new_assignment(machine.machine_id, "project_x", now)
            assignment = made.assignment_id
            row = await service.assignments.ask(assignment, Place(made, machine.registration))
            assert (row.state, row.revision) == (AssignmentState.UNPLACED, 1)
            await service.assignments.ask(assignment, Status(NodeStatus(machine.machine_id,
                                                                        1, 1, ())))  # fmt: skip
            row = await runtime.store.read(lambda c: get_assignment(c, assignment))
            assert (row.state, row.lease_epoch) == (AssignmentState.LAUNCHING, 1)
            assert {t.name for t in runtime.timers.armed("machine")} == {"reconcile"}
            request = MachineLeaseRequest("b-1", machine.machine_id, assignment, 1, "acquire")
            [grant] = await service.assignments.ask(assignment, LeaseRequest(request))
            assert grant.grant.pair == (1, 1)
            row = await runtime.store.read(lambda c: get_assignment(c, assignment))
            assert (row.state, row.next_sequence) == (AssignmentState.ACTIVE, 2)
            await service.assignments.ask(
                assignment, Status(_running(machine.machine_id, assignment, 2, "b-1", 1))
            )
            assert service.relay.leases.blockers(assignment) == ()
            assert {t.name for t in runtime.timers.armed("machine")} == {"lease", "expiry"}
            return machine.machine_id, assignment

    async def second(machine_id: str, assignment: str) -> None:
        async with _control(path) as runtime:
            service = runtime[MACHINES]
            row = await runtime.store.read(lambda c: get_assignment(c, assignment))
            assert (row.state, row.barrier, row.revision) == (AssignmentState.ACTIVE, (1, 1), 4)
            assert "barrier" in service.relay.leases.blockers(assignment)
            armed = {t.name for t in runtime.timers.armed("machine")}
            assert armed == {"lease", "barrier", "expiry"}
            await service.assignments.ask(
                assignment, Status(_running(machine_id, assignment, 3, "b-1", 1))
            )
            assert "barrier" in service.relay.leases.blockers(assignment)  # an older grant
            request = MachineLeaseRequest("b-2", machine_id, assignment, 1, "renew")
            [grant] = await service.assignments.ask(assignment, LeaseRequest(request))
            assert grant.grant.pair == (1, 2)
            await service.assignments.ask(
                assignment, Status(_running(machine_id, assignment, 4, "b-2", 2))
            )
            assert service.relay.leases.blockers(assignment) == ()
            row = await runtime.store.read(lambda c: get_assignment(c, assignment))
            assert (row.barrier, row.next_sequence) == (None, 3)
            assert {t.name for t in runtime.timers.armed("machine")} == {"lease", "expiry"}

    async def both() -> None:
        machine_id, assignment = await first()
        stored = _rows(path, "SELECT name FROM actor_timers WHERE kind = 'machine'")
        assert sorted(stored) == [("expiry",), ("lease",)]  # durable: they outlive the run
        await second(machine_id, assignment)

    trio.run(both)


def test_a_grant_acknowledges_only_what_the_session_actors_took(tmp_path: Path) -> None:
    """The Node reports 5 records written; Control's Session actors took 3 (the relay's
    evidence ledger): the grant's `acknowledgedThrough` is 3, not the 5 the pure machine
    would acknowledge, so the Node keeps the 2 records Control has not written; a retried
    request gets the grant exactly as first sent."""

    async def main() -> None:
        async with _control(tmp_path / "maia.db") as runtime:
            now = CLOCK.wall_ms()
            machine, _ = await runtime.store.write(
                lambda c: enroll_write(c, "box", now, "local-user"))  # fmt: skip
            service = runtime[MACHINES]
            made = new_assignment(machine.machine_id, "project_x", now)
            assignment, source = made.assignment_id, f"{machine.machine_id}.{made.assignment_id}"
            await service.assignments.ask(assignment, Place(made, machine.registration))
            await service.relay.on_status(NodeStatus(machine.machine_id, 1, 1, ()))
            ledger = service.relay.ledger.of(source)
            for sequence in (1, 2, 3, 4, 5):
                ledger.received(sequence, kept=True)
            for sequence in (1, 2, 3):
                ledger.taken(sequence)
            assert ledger.advance() == 3
            spool = EvidenceSpool(source)
            for _ in range(5):
                spool = spool.append(10, 0)
            report = MachineLeaseReport(assignment, 1, "starting", None, None, 0,
                                        spool.status(0))  # fmt: skip
            await service.relay.on_status(NodeStatus(machine.machine_id, 1, 2, (report,)))
            request = MachineLeaseRequest("b-1", machine.machine_id, assignment, 1, "acquire")
            state = service.relay.leases.leases[assignment].state
            assert state.nodes[machine.machine_id].registration.acknowledged[source] == 5
            [grant] = await service.relay.on_request(request)
            assert isinstance(grant, GrantFrame)
            assert grant.grant.acknowledged_through == 3
            ledger.taken(4)
            ledger.taken(5)
            [again] = await service.relay.on_request(request)
            assert isinstance(again, GrantFrame)
            assert again.grant == grant.grant

    trio.run(main)


def test_an_unanswered_launch_is_sent_again_by_its_durable_timer(tmp_path: Path) -> None:
    """Nothing ticks in memory: with no status after the first, a launch the Node does not
    answer is sent again only because the actor's `reconcile` timer fires (5 s later), and
    that resend arms the timer again."""

    async def main() -> None:
        async with _control(tmp_path / "maia.db") as runtime:
            now = CLOCK.wall_ms()
            machine, _ = await runtime.store.write(
                lambda c: enroll_write(c, "box", now, "local-user"))  # fmt: skip
            service = runtime[MACHINES]
            sent: list[Any] = []
            second = trio.Event()

            async def send(frame: object) -> None:
                sent.append(frame)
                if len([f for f in sent if isinstance(f, LaunchAssignmentFrame)]) >= 2:
                    second.set()

            service.links.open(machine.machine_id, lambda: None, send)
            made = new_assignment(machine.machine_id, "project_x", now)
            await service.assignments.ask(made.assignment_id, Place(made, machine.registration))
            await service.relay.on_status(NodeStatus(machine.machine_id, 1, 1, ()))
            launches = [f for f in sent if isinstance(f, LaunchAssignmentFrame)]
            assert [f.lease_epoch for f in launches] == [1]
            fired = runtime.timers.fired
            with trio.move_on_after(20):
                await second.wait()
            launches = [f for f in sent if isinstance(f, LaunchAssignmentFrame)]
            assert [f.lease_epoch for f in launches] == [1, 1]
            assert runtime.timers.fired > fired
            assert {t.name for t in runtime.timers.armed("machine")} == {"reconcile"}

    trio.run(main)
