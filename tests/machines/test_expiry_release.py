"""What an assignment's expiry reconciliation releases (spec MN0 item 10: a replacement
launches after cleanup reconciliation, the Node's `stopped` report, or the explicit expiry
reconciliation MN2 defines with an overlapping-execution test, `test_lease_expiry.py`).

The expiry ends what Control holds live on the machine (its attempts: the relay) and, as a
`stopped` report would, the assignment's lease epoch: the row moves `expired` to
`reconciled`, the machine drops the epoch's grants and arms no lease or expiry timer, and
the next epoch is launched once the machine is back (a Node still stopping the old epoch
ignores a launch until its stop has ended: it never runs beside it). Before, the epoch
stayed `active` with its horizon behind it, and a machine that came back without a
`stopped` report for it (a fresh Execution Node) was never launched again.

The assignment actor on the real runtime and a real SQLite file, a `FakeClock` moved by
hand and the actor told to look again (`Restarted`, as its durable timer would)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import trio

import storage
from actors import WORKERS, ActorRuntime, open_actor_runtime
from actors.machine import (
    EXPIRY_GRACE_MS,
    GRANT_TTL_MS,
    MACHINES,
    AckFrame,
    AssignmentState,
    LaunchAssignmentFrame,
    LeaseRequest,
    Place,
    Restarted,
    Status,
    StopWorkerFrame,
    TurnEventFrame,
    WorkerFrame,
    enroll_write,
    get_assignment,
    new_assignment,
)
from maia.config import UserConfig
from maia.core import FakeClock
from supervision.leases import (
    ControlPhase,
    EvidenceSpool,
    MachineLeaseReport,
    MachineLeaseRequest,
    NodeStatus,
)

from .test_assignment_actor import _NoWorkers, _running


@asynccontextmanager
async def _control(path: Path, clock: FakeClock) -> AsyncIterator[ActorRuntime]:
    async with (
        storage.open_storage(path, clock=clock) as store,
        open_actor_runtime(store, clock=clock, config=UserConfig(), kinds=(WORKERS, MACHINES),
                           options={"worker_supervisor": _NoWorkers()}) as runtime,
    ):  # fmt: skip
        yield runtime


async def _active(runtime: ActorRuntime, clock: FakeClock) -> tuple[str, str]:
    """An enrolled machine with one assignment: launched, granted (1, 1), confirmed."""
    now = clock.wall_ms()
    machine, _ = await runtime.store.write(lambda c: enroll_write(c, "box", now, "local-user"))
    service = runtime[MACHINES]
    made = new_assignment(machine.machine_id, "project_x", now)
    assignment = made.assignment_id
    await service.assignments.ask(assignment, Place(made, machine.registration))
    await service.assignments.ask(assignment, Status(NodeStatus(machine.machine_id, 1, 1, ())))
    request = MachineLeaseRequest("b-1", machine.machine_id, assignment, 1, "acquire")
    await service.assignments.ask(assignment, LeaseRequest(request))
    await service.assignments.ask(
        assignment, Status(_running(machine.machine_id, assignment, 2, "b-1", 1))
    )
    assert service.relay.leases.blockers(assignment) == ()
    return machine.machine_id, assignment


def test_expiry_releases_the_lease_epoch_too(tmp_path: Path) -> None:
    """The machine goes away with an attempt live; past the horizon and the grace the
    attempt is over (the hold) and so is the epoch (the row `reconciled`, no grants, no
    lease or expiry timer). When the machine comes back with no report of the old epoch,
    epoch 2 is launched; before, nothing was, ever."""
    clock = FakeClock()

    async def main() -> None:
        async with _control(tmp_path / "maia.db", clock) as runtime:
            machine_id, assignment = await _active(runtime, clock)
            service = runtime[MACHINES]
            relay = service.relay
            handle = relay.attach_handle(machine_id, assignment, "attempt_a", 7)
            await relay.on_frame(machine_id, WorkerFrame("worker", "attempt_a", "spawned", pid=9))
            assert relay.holds(machine_id, assignment)
            clock.advance(GRANT_TTL_MS + EXPIRY_GRACE_MS)  # never linked in this run: away
            await service.assignments.ask(assignment, Restarted())
            assert relay.handles == {}  # the hold: the attempt is over
            assert (await handle.wait_stopped()).fence_reason == "runtime_lost"
            row = await runtime.store.read(lambda c: get_assignment(c, assignment))
            assert (row.state, row.lease_epoch) == (AssignmentState.RECONCILED, 1), row
            lease = relay.leases.leases[assignment].state.assignments[assignment]
            assert (lease.phase, lease.grants) == (ControlPhase.RECONCILED, ())
            assert {t.name for t in runtime.timers.armed("machine")} == set()
            sent: list[Any] = []

            async def send(frame: object) -> None:
                sent.append(frame)

            service.links.open(machine_id, lambda: None, send)  # back, knowing no epoch
            await relay.on_hello(machine_id, ())
            await relay.on_status(NodeStatus(machine_id, 1, 3, ()))
            launches = [f.lease_epoch for f in sent if isinstance(f, LaunchAssignmentFrame)]
            assert launches == [2]
            row = await runtime.store.read(lambda c: get_assignment(c, assignment))
            assert (row.state, row.lease_epoch) == (AssignmentState.LAUNCHING, 2)

    trio.run(main)


def _report(machine_id: str, assignment: str, sequence: int, phase: str) -> NodeStatus:
    """A status reporting epoch 1 of the assignment in `phase` (`stopping`, `stopped`)."""
    spool = EvidenceSpool(f"{machine_id}.{assignment}").status(0)
    report = MachineLeaseReport(assignment, 1, phase, "b-1", 1, 0, spool)  # type: ignore[arg-type]
    return NodeStatus(machine_id, 1, sequence, (report,))


class _Sent:
    """The frames Control sent on one link of the machine."""

    def __init__(self) -> None:
        self.frames: list[Any] = []

    async def send(self, frame: object) -> None:
        self.frames.append(frame)

    def launches(self) -> list[int]:
        return [f.lease_epoch for f in self.frames if isinstance(f, LaunchAssignmentFrame)]

    def stops(self) -> list[tuple[str, str]]:
        return [(f.attempt_id, f.reason) for f in self.frames if isinstance(f, StopWorkerFrame)]


def test_a_machine_back_still_running_an_expired_attempt_gets_no_epoch_beside_it(
    tmp_path: Path,
) -> None:
    """Expiry ended attempt A and the epoch; the machine comes back still running A (its
    stop failed): its hello lists A, and Control asks it to stop A (`lease_expired`); while
    its statuses report epoch 1 `stopping`, no epoch 2 is launched; once it reports
    `stopped`, epoch 2 is. A's late frames change nothing (its exit, a record of its turn:
    settled and acknowledged, the Session's turn already failed)."""
    clock = FakeClock()

    async def main() -> None:
        async with _control(tmp_path / "maia.db", clock) as runtime:
            machine_id, assignment = await _active(runtime, clock)
            service = runtime[MACHINES]
            relay = service.relay
            relay.attach_handle(machine_id, assignment, "attempt_a", 7)
            clock.advance(GRANT_TTL_MS + EXPIRY_GRACE_MS)
            await service.assignments.ask(assignment, Restarted())
            row = await runtime.store.read(lambda c: get_assignment(c, assignment))
            assert row.state is AssignmentState.RECONCILED
            link = _Sent()
            service.links.open(machine_id, lambda: None, link.send)
            await relay.on_hello(machine_id, ("attempt_a",))
            assert link.stops() == [("attempt_a", "lease_expired")]
            await relay.on_status(_report(machine_id, assignment, 3, "stopping"))
            clock.advance(5_000)
            await relay.on_status(_report(machine_id, assignment, 4, "stopping"))
            await service.assignments.ask(assignment, Restarted())  # a timer's look, too
            assert link.launches() == []
            source = f"{machine_id}.{assignment}"
            late = TurnEventFrame("turn_event", "attempt_a", "turn_a", "delta", source, 1, "late")
            await relay.on_frame(machine_id, late)
            await relay.on_frame(machine_id, WorkerFrame("worker", "attempt_a", "exited",
                                                         returncode=0))  # fmt: skip
            assert relay.handles == {}
            assert [f.through for f in link.frames if isinstance(f, AckFrame)] == [1]
            await relay.on_status(_report(machine_id, assignment, 5, "stopped"))
            assert link.launches() == [2]
            row = await runtime.store.read(lambda c: get_assignment(c, assignment))
            assert (row.state, row.lease_epoch) == (AssignmentState.LAUNCHING, 2)

    trio.run(main)


class _GatedEnd:
    """A remote attempt whose end, once begun, waits for `go` (what interleaves the hello
    with the expiry); otherwise what the relay asks of a handle."""

    def __init__(self) -> None:
        self.begun = trio.Event()
        self.go = trio.Event()
        self.ended_with: Any = None
        self.abandoned = None

    async def ended(self, info: Any) -> None:
        self.begun.set()
        await self.go.wait()
        self.ended_with = info

    async def send_abandon(self) -> None:
        return None


def test_a_hello_during_the_expiry_keeps_the_epoch_and_what_the_node_still_runs(
    tmp_path: Path,
) -> None:
    """Expiry races a reconnect: the machine's hello arrives while the expiry is ending
    attempt A (the first of two). A, already ended and noted expired, is asked to stop
    (`lease_expired`) since the hello lists it; B, which the hello finds still held and
    running, stays held (the hello fences it, its Session waits for the Node's word) and
    is not ended by the expiry after all; the epoch is not reconciled by expiry: the
    machine is back, and its own reports decide (`stopped` reconciles it, as ever)."""
    clock = FakeClock()

    async def main() -> None:
        async with _control(tmp_path / "maia.db", clock) as runtime:
            machine_id, assignment = await _active(runtime, clock)
            service = runtime[MACHINES]
            relay = service.relay
            first = _GatedEnd()
            relay.handles["attempt_a"] = (machine_id, assignment, first)  # type: ignore[assignment]
            second = relay.attach_handle(machine_id, assignment, "attempt_b", 8)
            relay.session_of["attempt_b"] = "session_b"
            clock.advance(GRANT_TTL_MS + EXPIRY_GRACE_MS)
            link = _Sent()
            async with trio.open_nursery() as nursery:
                nursery.start_soon(service.assignments.ask, assignment, Restarted())
                await first.begun.wait()  # the expiry is ending A
                service.links.open(machine_id, lambda: None, link.send)
                await relay.on_hello(machine_id, ("attempt_a", "attempt_b"))
                first.go.set()
            assert first.ended_with is not None
            assert link.stops() == [("attempt_a", "lease_expired")]
            assert set(relay.handles) == {"attempt_b"}  # still held: the Node runs it
            assert second.exit_info is None
            assert "attempt_live" in relay.blockers(assignment, "session_b")
            row = await runtime.store.read(lambda c: get_assignment(c, assignment))
            assert row.state is AssignmentState.ACTIVE, row  # the epoch is the Node's to end
            await relay.on_frame(machine_id, WorkerFrame("worker", "attempt_b", "exited",
                                                         returncode=0))  # fmt: skip
            await relay.on_status(_report(machine_id, assignment, 3, "stopped"))
            row = await runtime.store.read(lambda c: get_assignment(c, assignment))
            assert (row.state, row.lease_epoch) == (AssignmentState.LAUNCHING, 2)
            assert link.launches() == [2]

    trio.run(main)


def test_an_expired_machine_as_shown_after_a_control_restart(tmp_path: Path) -> None:
    """What `machine.show` reads (the board) of a machine whose lease expired: no lease
    horizon once the epoch is reconciled (it showed the expired one, negative), and after
    a Control restart still none (the restart's discontinuity moves every horizon a maximum
    TTL out, so it showed a live lease a minute long), the row still `reconciled`, the
    assignment counted and behind the restart's barrier; epoch 2 waits for the machine."""
    clock = FakeClock()
    path = tmp_path / "maia.db"

    async def main() -> None:
        async with _control(path, clock) as runtime:
            machine_id, assignment = await _active(runtime, clock)
            board = runtime[MACHINES].relay.leases
            assert 0 < (board.horizon_in_ms(machine_id) or 0) <= GRANT_TTL_MS
            clock.advance(GRANT_TTL_MS + EXPIRY_GRACE_MS)
            await runtime[MACHINES].assignments.ask(assignment, Restarted())
            assert board.horizon_in_ms(machine_id) is None
        clock.advance(1_000)
        async with _control(path, clock) as runtime:
            board = runtime[MACHINES].relay.leases
            assert len(board.of_machine(machine_id)) == 1
            assert board.barrier(machine_id)
            assert board.horizon_in_ms(machine_id) is None
            row = await runtime.store.read(lambda c: get_assignment(c, assignment))
            assert (row.state, row.lease_epoch) == (AssignmentState.RECONCILED, 1)
            assert {t.name for t in runtime.timers.armed("machine")} == {"barrier"}

    trio.run(main)
