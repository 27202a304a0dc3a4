"""The Control Node's side of remote work: leases per assignment, remote worker attempts,
and the frames between them and the links.

`MachineRelay` is what the listener calls with each authenticated frame and what the
placing supervisor asks for a worker. It owns the `ControlLeases` (the pure machines) and
the live `RemoteWorkerHandle`s by attempt. Its tick (every second) advances every lease
machine and sends the launches they ask for; before an epoch or a grant goes out, its
numbers are written (`save_lease`).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, Final

import trio

from maia.core import MaiaError, digest_json, new_id, to_json
from storage import next_worker_epoch
from supervision.leases import (
    ControlAction,
    MachineAssignment,
    MachineLeaseRequest,
    NodeStatus,
    RequestRefused,
    SendGrant,
    to_wire,
)
from supervision.workers import ExitInfo, WorkerSpec

from ._assignments import AssignmentRow, all_assignments, save_lease
from ._control_leases import ControlLeases
from ._links import LinkBoard, LinkState
from ._relay_frames import (
    AckFrame,
    GrantFrame,
    LaunchAssignmentFrame,
    LaunchWorkerFrame,
    RefusedFrame,
    TurnEventFrame,
    WireSpec,
    WorkerFrame,
)
from ._remote_worker import RemoteWorkerHandle
from ._sql import get_machine
from ._trace_hook import MachineTrace

log = logging.getLogger("maia.machines")
TICK_S: Final = 1.0
RESEND_LAUNCH_MS: Final = 5_000
PLACEMENT_WAIT_S: Final = 20.0  # a launch waits this long for item 9 to hold, then is held


def environment_digest(assignment: AssignmentRow) -> str:
    """sha256 over RFC 8785 JSON of the assignment's environment definition (revision 1: the
    Project itself, its worker launches checked one by one)."""
    return digest_json({"projectId": assignment.project_id,
                        "environmentRevision": assignment.environment_revision})  # fmt: skip


def spec_digest(spec: WireSpec) -> str:
    """sha256 over RFC 8785 JSON of a worker launch: what the Execution Node compares."""
    return digest_json(to_json(spec))


def wire_spec(spec: WorkerSpec) -> WireSpec:
    activation = {k: str(v) for k, v in spec.activation.items() if k != "stateDir"}
    return WireSpec(tuple(spec.argv), spec.cwd, dict(spec.env), dict(spec.options), activation)


class MachineRelay:
    """See the module."""

    def __init__(self, store: Any, clock: Any, links: LinkBoard) -> None:
        self.store = store
        self.clock = clock
        self.links = links
        self.leases = ControlLeases(store.node_id, clock)
        self.handles: dict[str, tuple[str, str, RemoteWorkerHandle]] = {}  # attempt -> ...
        self._launch_sent: dict[tuple[str, int], int] = {}
        self.trace = MachineTrace.from_env(clock)  # off unless a test asks (docs/machines.md)

    async def restore(self) -> None:
        """At open: every assignment's machine, rebuilt behind a restart barrier."""

        def read(conn: Any) -> list[tuple[AssignmentRow, Any]]:
            found = []
            for row in all_assignments(conn):
                machine = get_machine(conn, machine_id=row.machine_id)
                if machine is not None:
                    found.append((row, machine.registration))
            return found

        found = await self.store.read(read)
        if found:  # a Control start with assignments: the barrier's discontinuity
            self.trace.emit("discontinuity", cause="control_restarted")
        for row, registration in found:
            self.leases.restore(row, registration)

    # -- placement ---------------------------------------------------------------------

    def blockers(self, assignment_id: str) -> tuple[str, ...]:
        lease = self.leases.leases.get(assignment_id)
        found = list(self.leases.blockers(assignment_id))
        if lease is None or self.links.get(lease.row.machine_id) is None:
            found.insert(0, "not_connected")
        return tuple(found)

    async def start_remote(self, assignment_id: str, spec: WorkerSpec) -> RemoteWorkerHandle:
        """Launch a worker attempt under the assignment. Raises `held` naming every item-9
        condition that blocks placement, `unavailable` when the Node does not start it."""
        blockers = self.blockers(assignment_id)
        with trio.move_on_after(PLACEMENT_WAIT_S):  # a fresh lease is a round trip away
            while blockers:
                await trio.sleep(0.2)
                blockers = self.blockers(assignment_id)
        if blockers:
            raise MaiaError("held", f"admission is held: the machine assignment is blocked "
                            f"({', '.join(blockers)})", {"detail": ",".join(blockers)})  # fmt: skip
        lease = self.leases.leases[assignment_id]
        machine_id = lease.row.machine_id
        link_epoch = lease.state.assignments[assignment_id].lease_epoch
        self.trace.emit("placement", node_id=machine_id, assignment_id=assignment_id,
                        lease_epoch=link_epoch, control_mono_ms=self.clock.monotonic_ms(),
                        admitted=lease.state.nodes[machine_id].registration.admits)  # fmt: skip
        epoch = int(await self.store.write(next_worker_epoch))
        attempt_id = new_id("attempt")

        async def send(frame: object) -> bool:
            return await self.send(machine_id, frame)

        async def acknowledge(through: int) -> None:
            source = f"{machine_id}.{assignment_id}"
            # Called once the Session actor took record `through` (written to its journal).
            self.trace.emit("record_stored", source=source, sequence=through)
            if await self.send(machine_id, AckFrame("ack", source, through)):
                self.trace.emit("record_acknowledged", source=source, through=through)

        handle = RemoteWorkerHandle(attempt_id, epoch, send, acknowledge)
        self.handles[attempt_id] = (machine_id, assignment_id, handle)
        remote = wire_spec(spec)
        frame = LaunchWorkerFrame("launch_worker", assignment_id, link_epoch, attempt_id, epoch,
                                  remote, spec_digest(remote))  # fmt: skip
        if not await self.send(machine_id, frame):
            self.handles.pop(attempt_id, None)
            raise MaiaError("unavailable", "the Execution Node is not connected",
                            {"target": "machine"})  # fmt: skip
        try:
            await handle.wait_spawned()
        except MaiaError:
            self.handles.pop(attempt_id, None)
            raise
        return handle

    # -- the link ----------------------------------------------------------------------

    async def send(self, machine_id: str, frame: object) -> bool:
        link = self.links.get(machine_id)
        if link is None or link.send is None:
            return False
        try:
            await link.send(frame)
        except Exception:  # the link went away under us: its task ends it
            return False
        return True

    async def on_hello(self, machine_id: str, live: Sequence[str]) -> None:
        """Cleanup reconciliation: attempts the Node says it no longer runs are over."""
        for attempt_id, (owner, _, handle) in list(self.handles.items()):
            if owner == machine_id and attempt_id not in live:
                await handle.ended(ExitInfo(None, None, "runtime_lost", "exited", (), ""))
                self.handles.pop(attempt_id, None)

    async def on_frame(self, machine_id: str, frame: Any) -> None:
        entry = self.handles.get(frame.attempt_id)
        if entry is None or entry[0] != machine_id:
            return  # an attempt this Control Node does not run there: changes nothing
        handle = entry[2]
        if isinstance(frame, WorkerFrame):
            if frame.phase == "spawned" and frame.sequence and handle.pid == 0:
                # The admission's record: the Session actor writes the attempt's row from it.
                self.trace.emit("record_stored", source=f"{machine_id}.{entry[1]}",
                                sequence=frame.sequence)  # fmt: skip
            await handle.on_worker(frame)
            if frame.phase in ("exited", "refused"):
                self.handles.pop(frame.attempt_id, None)
        elif isinstance(frame, TurnEventFrame):
            await handle.on_turn_event(frame)

    async def on_request(self, request: MachineLeaseRequest) -> list[object]:
        answers: list[object] = []
        actions = self.leases.request(request)
        for action in actions:
            if isinstance(action, SendGrant) and not action.duplicate:
                self.trace.emit("grant_issued", grant=to_wire(action.grant),
                                control_mono_ms=self.clock.monotonic_ms())  # fmt: skip
        for action in actions:
            answers += await self._answer(action)
        return answers

    async def _answer(self, action: ControlAction) -> list[object]:
        if isinstance(action, SendGrant):
            if not action.duplicate:
                grant = action.grant
                await self._save(grant.assignment_id, grant.lease_epoch,
                                 grant.renewal_sequence + 1, "active")  # fmt: skip
            return [GrantFrame("grant", action.grant)]
        if isinstance(action, RequestRefused):
            return [RefusedFrame("refused", action.request_id, action.reason)]
        return []

    async def on_status(self, status: NodeStatus) -> None:
        self.trace.emit("report_received", status=to_wire(status),
                        control_mono_ms=self.clock.monotonic_ms())  # fmt: skip
        self.leases.status(status)
        for report in status.reports:
            lease = self.leases.leases.get(report.assignment_id)
            if lease is not None and report.phase == "stopped":
                held = lease.state.assignments[report.assignment_id]
                await self._save(report.assignment_id, held.lease_epoch, held.next_sequence,
                                 "reconciled")  # fmt: skip

    async def _save(self, assignment_id: str, epoch: int, sequence: int, phase: str) -> None:
        now = self.clock.wall_ms()
        await self.store.write(lambda c: save_lease(c, assignment_id, epoch, sequence, phase,
                                                    now))  # fmt: skip

    def link_opened(self, link: LinkState) -> None:
        link.barrier = self.leases.barrier(link.machine_id)

    # -- the tick ----------------------------------------------------------------------

    async def run(self, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        while True:
            await trio.sleep(TICK_S)
            try:
                await self.tick()
            except Exception:  # a bug here must not end the kind: logged, tried again
                log.exception("machine relay tick failed")

    async def tick(self) -> None:
        for lease, launch in self.leases.tick():
            row = lease.row
            key = (row.assignment_id, launch.lease_epoch)
            now_ms = self.clock.monotonic_ms()
            if now_ms - self._launch_sent.get(key, -RESEND_LAUNCH_MS) < RESEND_LAUNCH_MS:
                continue
            await self._save(row.assignment_id, launch.lease_epoch, 1, "launching")
            registration = lease.state.nodes[row.machine_id].registration
            assignment = MachineAssignment(row.assignment_id, self.store.node_id,
                                           registration.incarnation, row.project_id,
                                           row.project_id, row.environment_revision,
                                           environment_digest(row))  # fmt: skip
            frame = LaunchAssignmentFrame("launch_assignment", assignment, launch.lease_epoch)
            if await self.send(row.machine_id, frame):
                if key not in self._launch_sent:
                    self.trace.emit("launch", node_id=row.machine_id,
                                    assignment_id=row.assignment_id,
                                    lease_epoch=launch.lease_epoch)  # fmt: skip
                self._launch_sent[key] = now_ms
        for machine_id, link in list(self.links.links.items()):
            link.barrier = self.leases.barrier(machine_id)
