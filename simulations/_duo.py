"""A scripted pair — one Control machine, one Node machine — driven by explicit readings.

The named fixtures use it to replay the spec's examples with the spec's own numbers:
every reading is given in whole seconds on each party's clock, every message is handed
over (or lost) by the script. No network, no randomness.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs

from supervision.leases import (
    RULES,
    ControlState,
    LeaseRules,
    MachineLeaseGrant,
    MachineLeaseRequest,
    NodeLeaseState,
    NodeStatus,
    Reading,
    RequestArrived,
    SendGrant,
    SendRequest,
    StatusArrived,
    Tick,
    control_step,
    new_control,
    node_report,
    node_step,
    placement_blockers,
)
from supervision.leases import Launch as LaunchEvent

S = 1_000
WALL0 = 1_764_460_800_000


@attrs.define
class Duo:
    """Control `ctl` and Node `n1` sharing assignment `a1`; readings in ms on each clock."""

    rules: LeaseRules = RULES
    control: ControlState = attrs.field(factory=lambda: new_control("ctl", ("a1",), ("n1",)))
    node: NodeLeaseState = attrs.field(
        factory=lambda: NodeLeaseState(node_id="n1", assignment_id="a1", boot="n1.b1")
    )
    node_wall_offset_ms: int = 0
    control_wall_offset_ms: int = 0
    report_sequence: int = 0
    log: list[str] = attrs.Factory(list)

    def c_now(self, t_ms: int) -> Reading:
        return Reading(t_ms, WALL0 + t_ms + self.control_wall_offset_ms)

    def n_now(self, t_ms: int) -> Reading:
        return Reading(t_ms, WALL0 + t_ms + self.node_wall_offset_ms)

    def control_do(self, event: Any, t_ms: int) -> tuple[Any, ...]:
        self.control, actions = control_step(self.control, event, self.c_now(t_ms), self.rules)
        self.log.append(f"{t_ms:>7} control {event!r} -> {actions!r}")
        return actions

    def node_do(self, event: Any, t_ms: int) -> tuple[Any, ...]:
        self.node, actions = node_step(self.node, event, self.n_now(t_ms), self.rules)
        self.log.append(f"{t_ms:>7} node    {event!r} -> {actions!r}")
        return actions

    def status(self, t_ms: int) -> None:
        """The Node sends an authenticated status (a heartbeat with its report)."""
        self.report_sequence += 1
        report = node_report(self.node, self.n_now(t_ms))
        status = NodeStatus("n1", 1, self.report_sequence, () if report is None else (report,))
        self.control_do(StatusArrived(status), t_ms)

    def launch(self, t_ms: int) -> MachineLeaseRequest:
        """Control places a1 on n1 (epoch 1); the Node sends its acquire request."""
        self.status(t_ms)
        self.control_do(Tick(), t_ms)
        return self.request_of(self.node_do(LaunchEvent(1), t_ms))

    @staticmethod
    def request_of(actions: tuple[Any, ...]) -> MachineLeaseRequest:
        return next(a.request for a in actions if isinstance(a, SendRequest))

    def issue(self, request: MachineLeaseRequest, t_ms: int, ttl_ms: int) -> MachineLeaseGrant:
        """Control answers `request` at `t_ms` with a `ttl_ms` grant."""
        actions = self.control_do(RequestArrived(request, ttl_ms), t_ms)
        return next(a.grant for a in actions if isinstance(a, SendGrant))

    def blockers(self, t_ms: int) -> tuple[str, ...]:
        return placement_blockers(self.control, "a1", self.c_now(t_ms))

    @property
    def horizon(self) -> int | None:
        return self.control.assignments["a1"].horizon_ms


@attrs.frozen
class FixtureResult:
    name: str
    passed: bool
    failures: tuple[str, ...]


class Expect:
    """Collects failed expectations instead of stopping at the first."""

    def __init__(self) -> None:
        self.failures: list[str] = []

    def __call__(self, ok: bool, what: str) -> None:
        if not ok:
            self.failures.append(what)

    def equal(self, actual: object, expected: object, what: str) -> None:
        if actual != expected:
            self.failures.append(f"{what}: expected {expected!r}, got {actual!r}")


Fixture = Callable[[Expect], None]
