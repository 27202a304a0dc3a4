"""The simulated world: virtual time, an event heap, the parties, their process trees.

One `random.Random(seed)` drives every choice; events are ordered by (time, sequence), so
a seed's trace is the same on every run and every machine. The world applies faults as
they come due, delivers messages through the network, runs the checker after every step
and records a readable trace when asked.
"""

from __future__ import annotations

import heapq
import random
from typing import Any

import attrs

from supervision.leases import (
    RENEW_BEFORE_MS,
    RULES,
    CleanupConfirmed,
    ControlPhase,
    HostResumed,
    LeaseRules,
    NodeLeaseState,
    new_control,
)

from ._checker import Checker
from ._clocks import PartyClock
from ._model import CONTROL, Fault, FaultKind, Scenario
from ._network import Network, Window
from ._parties import WAKE_MS, ControlParty, NodeParty, Party


@attrs.define
class Execution:
    """One process tree running an assignment's epoch on a Node."""

    node_id: str
    assignment_id: str
    lease_epoch: int
    started: int
    ending: bool = False


class World:
    def __init__(
        self, scenario: Scenario, seed: int, rules: LeaseRules = RULES, trace: bool = False
    ) -> None:
        self.scenario = scenario
        self.rng = random.Random(seed)
        self.rules = rules
        self.t = 0
        self.steps = 0
        self.checker = Checker(seed)
        self.trace: list[str] | None = [] if trace else None
        self.horizons_dirty = False
        self._heap: list[tuple[int, int, str, Any]] = []
        self._seq = 0
        spec = scenario.network
        self.network = Network(
            self.rng, spec.min_delay_ms, spec.max_delay_ms, spec.loss, spec.duplicate, spec.spike
        )
        self.network.healed_at = scenario.heal_ms
        self.executions: dict[str, list[Execution]] = {a: [] for a in scenario.assignments}
        self.control = ControlParty(CONTROL, self._clock(CONTROL))
        self.control.state = new_control(
            "ctl",
            scenario.assignments,
            scenario.nodes,
            suspend_aware=scenario.clock(CONTROL).suspend_aware,
        )
        self.nodes: dict[str, NodeParty] = {}
        for name in scenario.nodes:
            aware = scenario.clock(name).suspend_aware
            renew = dict(scenario.renew_before_ms).get(name, RENEW_BEFORE_MS)
            party = NodeParty(name, self._clock(name))
            party.machines = {
                a: NodeLeaseState(
                    node_id=name,
                    assignment_id=a,
                    boot=f"{name}.b1",
                    suspend_aware=aware,
                    renew_before_ms=renew,
                )
                for a in scenario.assignments
            }
            self.nodes[name] = party
        self._wake_generation: dict[str, int] = {}
        parties: list[Party] = [self.control, *self.nodes.values()]
        for index, each in enumerate(parties):
            self._start_wakes(each, index * 137 % WAKE_MS)
        for fault in scenario.faults:
            self._arm(fault)

    def _start_wakes(self, party: Party, at: int) -> None:
        """Start a party's timer chain; any older chain dies (its generation is stale)."""
        generation = self._wake_generation.get(party.name, 0) + 1
        self._wake_generation[party.name] = generation
        self.schedule(at, "wake", (party.name, generation))

    def _clock(self, name: str) -> PartyClock:
        spec = self.scenario.clock(name)
        return PartyClock(spec.mono_ppm, spec.wall_ppm, spec.wall_offset_ms, spec.suspend_aware)

    def party(self, name: str) -> Party:
        return self.control if name == CONTROL else self.nodes[name]

    def schedule(self, at: int, kind: str, payload: Any) -> None:
        self._seq += 1
        heapq.heappush(self._heap, (at, self._seq, kind, payload))

    def record(self, who: str, event: object, actions: tuple[object, ...]) -> None:
        if self.trace is not None and (actions or type(event).__name__ not in ("Wake", "Tick")):
            shown = "; ".join(repr(a) for a in actions)
            self.trace.append(f"{self.t:>9} {who:<7} {event!r} -> {shown}")

    def send(self, src: str, dst: str, message: object) -> None:
        for delay in self.network.delays(self.t, src, dst, message):
            self.schedule(self.t + delay, "deliver", (dst, message))

    # Process trees ----------------------------------------------------------------------

    def executing(self, node_id: str, assignment_id: str, epoch: int) -> bool:
        return any(
            e.node_id == node_id and e.lease_epoch == epoch for e in self.executions[assignment_id]
        )

    def start_execution(self, node_id: str, assignment_id: str, epoch: int) -> None:
        self.checker.run_started(self.t, node_id, assignment_id, epoch)
        self.executions[assignment_id].append(Execution(node_id, assignment_id, epoch, self.t))

    def stop_execution(
        self, node_id: str, assignment_id: str, epoch: int, *, kill: bool = False
    ) -> None:
        for execution in self.executions[assignment_id]:
            if execution.node_id == node_id and execution.lease_epoch == epoch:
                if not execution.ending:
                    execution.ending = True
                    low, high = (20, 1_000) if kill else self.scenario.stop_ms
                    delay = self.rng.randint(low, high)
                    if not kill and self.rng.random() < self.scenario.stuck_stop:
                        delay += self.rng.randint(10_000, 30_000)
                    self.schedule(self.t + delay, "exec_end", execution)
                return
        self.schedule(self.t + 1, "local", (node_id, (assignment_id, CleanupConfirmed(epoch))))

    def _exec_end(self, execution: Execution) -> None:
        node = self.nodes[execution.node_id]
        if node.host_suspended:  # a frozen host finishes nothing; retry after the resume
            self.schedule(self.t + 500, "exec_end", execution)
            return
        self.executions[execution.assignment_id].remove(execution)
        self.checker.run_ended(execution.node_id, execution.assignment_id, execution.lease_epoch)
        if node.status != "down":
            self._to_party(node, (execution.assignment_id, CleanupConfirmed(execution.lease_epoch)))

    # Faults -----------------------------------------------------------------------------

    def _arm(self, fault: Fault) -> None:
        kind = fault.kind
        if kind in (FaultKind.PARTITION, FaultKind.LOSS, FaultKind.DELAY):
            loss = {FaultKind.PARTITION: 1.0, FaultKind.LOSS: fault.amount / 100}.get(kind, 0.0)
            delay = fault.amount if kind is FaultKind.DELAY else 0
            end = fault.at + fault.duration
            if "|" in fault.target:
                a, b = fault.target.split("|")
                pairs = [(a, b), (b, a)]
            else:
                a, b = fault.target.split(">")
                pairs = [(a, b)]
            for src, dst in pairs:
                self.network.windows.append(Window(fault.at, end, src, dst, loss, delay))
        else:
            self.schedule(fault.at, "fault", fault)

    def _fault(self, fault: Fault) -> None:
        party = self.party(fault.target)
        end = self.t + fault.duration
        if fault.kind is FaultKind.WALL_STEP:
            party.clock.step_wall(self.t, fault.amount)  # Control reports what it detects
        elif fault.kind is FaultKind.KILL and party.status != "down":
            party.status = "down"
            party.backlog.clear()
            if isinstance(party, NodeParty):
                for executions in self.executions.values():
                    for execution in executions:
                        if execution.node_id == party.name:  # stdin closes: workers exit
                            self.stop_execution(
                                party.name,
                                execution.assignment_id,
                                execution.lease_epoch,
                                kill=True,
                            )
            self.schedule(end, "restart", party.name)
        elif fault.kind is FaultKind.PAUSE and party.status == "up":
            party.status = "paused"
            self.schedule(end, "unpause", party.name)
        elif fault.kind is FaultKind.SUSPEND and not party.host_suspended:
            party.host_suspended = True
            party.clock.set_suspended(self.t, True)
            self.schedule(end, "unsuspend", party.name)

    # The loop ---------------------------------------------------------------------------

    def _to_party(self, party: Party, message: object) -> None:
        if party.status == "down":
            return
        if not party.runnable:
            party.backlog.append(message)
            return
        party.deliver(self, message)  # type: ignore[attr-defined]

    def _drain(self, party: Party) -> None:
        while party.runnable and party.backlog:
            party.deliver(self, party.backlog.pop(0))  # type: ignore[attr-defined]
        if party.runnable:
            party.wake(self)  # type: ignore[attr-defined]
            self._start_wakes(party, self.t + party.wake_ms)

    def run(self) -> None:
        end = self.scenario.duration_ms
        while self._heap and self._heap[0][0] <= end:
            self.t, _, kind, payload = heapq.heappop(self._heap)
            self.steps += 1
            if kind == "wake":
                name, generation = payload
                party = self.party(name)
                if party.runnable and generation == self._wake_generation[name]:
                    party.wake(self)  # type: ignore[attr-defined]
                    self.schedule(self.t + party.wake_ms, "wake", payload)
            elif kind == "deliver" or kind == "local":
                self._to_party(self.party(payload[0]), payload[1])
            elif kind == "exec_end":
                self._exec_end(payload)
            elif kind == "fault":
                self._fault(payload)
            elif kind == "restart":
                self._restart(self.party(payload))
            elif kind == "unpause":
                party = self.party(payload)
                if party.status == "paused":
                    party.status = "up"
                    self._drain(party)
            elif kind == "unsuspend":
                self._unsuspend(self.party(payload))
            if self.horizons_dirty:
                self.horizons_dirty = False
                self._check_horizons()
        self.checker.liveness(
            self.scenario.heal_ms, end, self.scenario.assignments
        ) if self.scenario.check_liveness else None

    def _restart(self, party: Party) -> None:
        party.status = "up"
        party.backlog.clear()
        if isinstance(party, NodeParty):
            party.boot += 1
        else:
            self.checker.discontinuity()
        party.restarted(self)  # type: ignore[attr-defined]
        self._drain(party)

    def _unsuspend(self, party: Party) -> None:
        party.host_suspended = False
        party.clock.set_suspended(self.t, False)
        if party.status == "down":
            return
        if isinstance(party, ControlParty):
            self.checker.discontinuity()
            party.resumed(self)
        else:
            party.backlog.insert(0, HostResumed())
        self._drain(party)

    def _check_horizons(self) -> None:
        """Item 4's point: a Node's local deadline never falls after Control's horizon."""
        state = self.control.state
        assert state is not None
        for key, lease in state.assignments.items():
            if (
                lease.phase not in (ControlPhase.LAUNCHING, ControlPhase.ACTIVE)
                or lease.node_id is None
            ):
                continue
            node = self.nodes[lease.node_id]
            machine = node.machines[key]
            if (
                machine.lease_epoch != lease.lease_epoch
                or machine.expired
                or machine.deadline_ms is None
            ):
                continue
            deadline = node.clock.true_time_of(self.t, machine.deadline_ms)
            horizon = (
                float("-inf")
                if lease.horizon_ms is None
                else self.control.clock.true_time_of(self.t, lease.horizon_ms)
            )
            self.checker.check(
                deadline <= horizon + 1,
                "deadline_after_horizon",
                self.t,
                f"{key}@{lease.node_id}: deadline {deadline:.0f} after horizon {horizon:.0f}",
            )
