"""The simulated processes: a Control Node and Execution Nodes wrapped around the pure
lease machines. A party turns deliveries and timers into machine events, reads its own
clocks, and carries the machine's actions out through the world (network, process trees,
checker). Durable state (what survives a kill) is the machine state; everything else —
timers, backlog — is lost with the process.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs

from supervision.leases import (
    ControlState,
    Discontinuity,
    DiscontinuityRaised,
    GrantApplied,
    GrantArrived,
    GrantRefused,
    GrantReplayed,
    LaunchAssignment,
    MachineLeaseGrant,
    MachineLeaseRequest,
    NodeLeaseState,
    NodeStatus,
    PlaceWork,
    Reading,
    ReportNow,
    RequestArrived,
    RequestRefused,
    SendGrant,
    SendRequest,
    StartExecution,
    StatusArrived,
    StatusIgnored,
    StopExecution,
    Tick,
    Wake,
    WorkAdmitted,
    WorkArrived,
    control_observe,
    control_restarted,
    control_step,
    node_observe,
    node_report,
    node_restarted,
    node_step,
)
from supervision.leases import HostResumed as HostResumedEvent
from supervision.leases import Launch as LaunchEvent

from ._clocks import PartyClock
from ._model import CONTROL

if TYPE_CHECKING:
    from ._world import World

WAKE_MS = 2_000
"""A Node's timer: deadline, tripwire, renewals and retries."""
CONTROL_TICK_MS = 2_000
"""Control's timer: discontinuity check, launches, one placement attempt per assignment."""
HEARTBEAT_MS = 5_000


@attrs.frozen
class LaunchMsg:
    assignment_id: str
    lease_epoch: int


@attrs.frozen
class WorkMsg:
    assignment_id: str
    lease_epoch: int
    work_id: str


@attrs.define
class Party:
    name: str
    clock: PartyClock
    status: str = "up"  # up | paused | down
    host_suspended: bool = False
    backlog: list[object] = attrs.Factory(list)
    wake_ms: int = WAKE_MS

    @property
    def runnable(self) -> bool:
        return self.status == "up" and not self.host_suspended


@attrs.define
class NodeParty(Party):
    machines: dict[str, NodeLeaseState] = attrs.Factory(dict)
    boot: int = 1
    report_sequence: int = 0
    next_heartbeat: int = 0

    def wake(self, world: World) -> None:
        now = self.clock.read(world.t)
        report = False
        for key in self.machines:
            report |= self._step(world, key, Wake(), now)
        if report or world.t >= self.next_heartbeat:
            self.send_status(world)

    def deliver(self, world: World, message: object) -> None:
        now = self.clock.read(world.t)
        event: object
        if isinstance(message, MachineLeaseGrant):
            key, event = message.assignment_id, GrantArrived(message)
        elif isinstance(message, LaunchMsg):
            key, event = message.assignment_id, LaunchEvent(message.lease_epoch)
        elif isinstance(message, WorkMsg):
            key = message.assignment_id
            event = WorkArrived(message.work_id, message.lease_epoch, 64)
        elif isinstance(message, tuple):  # (assignment, CleanupConfirmed) from the world
            key, event = message
        elif isinstance(message, HostResumedEvent):
            report = False
            for name in self.machines:
                report |= self._step(world, name, message, now)
            if report:
                self.send_status(world)
            return
        else:
            raise TypeError(f"a Node cannot take {message!r}")
        if key in self.machines and self._step(world, key, event, now):
            self.send_status(world)

    def _step(self, world: World, key: str, event: object, now: Reading) -> bool:
        before, observed = node_observe(self.machines[key], now)
        state, actions = node_step(before, event, now, world.rules)  # type: ignore[arg-type]
        actions = observed + actions
        self.machines[key] = state
        world.record(self.name, event, actions)
        report = False
        for action in actions:
            if isinstance(action, GrantReplayed | GrantRefused):
                world.checker.check(
                    state == before, "replay_changed_state", world.t, f"{self.name}: {action}"
                )
            elif isinstance(action, SendRequest):
                world.send(self.name, CONTROL, action.request)
            elif isinstance(action, StartExecution):
                world.start_execution(self.name, key, action.lease_epoch)
            elif isinstance(action, StopExecution):
                world.stop_execution(self.name, key, action.lease_epoch)
            elif isinstance(action, WorkAdmitted):
                world.checker.check(
                    state.lease_valid(now.mono)
                    and world.executing(self.name, key, state.lease_epoch),
                    "admission_without_lease",
                    world.t,
                    f"{self.name}: {action.work_id}",
                )
            elif isinstance(action, ReportNow):
                report = True
            elif isinstance(action, GrantApplied):
                world.horizons_dirty = True
        return report

    def send_status(self, world: World) -> None:
        now = self.clock.read(world.t)
        self.report_sequence += 1
        reports = tuple(
            r for r in (node_report(m, now) for m in self.machines.values()) if r is not None
        )
        status = NodeStatus(self.name, 1, self.report_sequence, reports)
        world.send(self.name, CONTROL, status)
        self.next_heartbeat = world.t + HEARTBEAT_MS

    def restarted(self, world: World) -> None:
        report = False
        for key, machine in self.machines.items():
            state, actions = node_restarted(machine, f"{self.name}.b{self.boot}")
            self.machines[key] = state
            world.record(self.name, "restart", actions)
            for action in actions:
                if isinstance(action, StopExecution):
                    world.stop_execution(self.name, key, action.lease_epoch)
                report = True
        if report:
            self.send_status(world)


@attrs.define
class ControlParty(Party):
    state: ControlState | None = None
    wake_ms: int = CONTROL_TICK_MS

    def wake(self, world: World) -> None:
        self._step(world, Tick())

    def deliver(self, world: World, message: object) -> None:
        if isinstance(message, MachineLeaseRequest):
            ttl = world.rng.choice(world.scenario.grant_ttls_ms)
            self._step(world, RequestArrived(message, ttl))
        elif isinstance(message, NodeStatus):
            self._step(world, StatusArrived(message))
        else:
            raise TypeError(f"Control cannot take {message!r}")

    def resumed(self, world: World) -> None:
        self._step(world, Discontinuity("resume"))

    def restarted(self, world: World) -> None:
        assert self.state is not None
        now = self.clock.read(world.t)
        self.state, actions = control_restarted(self.state, now)
        world.horizons_dirty = True
        world.record(self.name, "restart", actions)

    def _step(self, world: World, event: object) -> None:
        assert self.state is not None
        now = self.clock.read(world.t)
        before, observed = control_observe(self.state, now)
        if isinstance(event, StatusArrived):
            world.checker.status_delivered(event.status, now.mono)
        state, actions = control_step(before, event, now, world.rules)  # type: ignore[arg-type]
        actions = observed + actions
        if state.assignments is not self.state.assignments:
            world.horizons_dirty = True
        self.state = state
        world.record(self.name, event, actions)
        for action in actions:
            if isinstance(action, SendGrant):
                if action.duplicate:
                    world.checker.check(
                        state == before, "replay_changed_state", world.t, str(action)
                    )
                else:
                    world.checker.grant_issued(action.grant, now.mono)
                world.send(CONTROL, action.node_id, action.grant)
            elif isinstance(action, RequestRefused | StatusIgnored):
                world.checker.check(state == before, "replay_changed_state", world.t, str(action))
            elif isinstance(action, LaunchAssignment):
                world.checker.launch(
                    world.t, action.node_id, action.assignment_id, action.lease_epoch
                )
                world.send(
                    CONTROL, action.node_id, LaunchMsg(action.assignment_id, action.lease_epoch)
                )
            elif isinstance(action, PlaceWork):
                node = state.nodes[action.node_id]
                world.checker.placement(
                    world.t,
                    action.node_id,
                    action.assignment_id,
                    action.lease_epoch,
                    now.mono,
                    node.registration.admits and not node.fenced,
                )
                message = WorkMsg(action.assignment_id, action.lease_epoch, action.work_id)
                world.send(CONTROL, action.node_id, message)
            elif isinstance(action, DiscontinuityRaised) and action.cause == "clock_disagreement":
                # Restarts and resumes are ground truth from the faults; a wall step counts
                # once Control sees it (a step undone between two readings is invisible and
                # harmless: horizons never depend on the wall clock).
                world.checker.discontinuity()
