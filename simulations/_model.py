"""The scenario a world runs: parties' clocks, the network's base behaviour, the faults.

A `Scenario` is plain data, so a named fixture and a seed's random schedule are the same
kind of thing; `simulations._faults.draw_scenario` builds one from a seed.
"""

from __future__ import annotations

import enum

import attrs

CONTROL = "control"


class FaultKind(enum.Enum):
    PARTITION = "partition"  # target "a>b" (one way) or "a|b" (both ways); loss 1
    LOSS = "loss"  # like a partition with loss `amount` percent
    DELAY = "delay"  # extra delay `amount` ms on the link
    KILL = "kill"  # process killed, restarted after `duration`
    PAUSE = "pause"  # process stopped (SIGSTOP, GC), resumed after `duration`
    SUSPEND = "suspend"  # host suspended, resumed (and reported) after `duration`
    WALL_STEP = "wall_step"  # wall clock stepped by `amount` ms


@attrs.frozen
class Fault:
    at: int
    kind: FaultKind
    target: str
    duration: int = 0
    amount: int = 0


@attrs.frozen
class ClockSpec:
    mono_ppm: int = 0
    wall_ppm: int = 0
    wall_offset_ms: int = 0
    suspend_aware: bool = True


@attrs.frozen
class NetworkSpec:
    min_delay_ms: int = 5
    max_delay_ms: int = 200
    loss: float = 0.0
    duplicate: float = 0.0
    spike: float = 0.0


@attrs.frozen
class Scenario:
    """What one run plays: `faults` end by `heal_ms`; the run lasts `duration_ms`."""

    nodes: tuple[str, ...] = ("n1", "n2")
    assignments: tuple[str, ...] = ("a1", "a2")
    clocks: tuple[tuple[str, ClockSpec], ...] = ()
    network: NetworkSpec = NetworkSpec()
    faults: tuple[Fault, ...] = ()
    heal_ms: int = 0
    duration_ms: int = 300_000
    grant_ttls_ms: tuple[int, ...] = (30_000,)
    stop_ms: tuple[int, int] = (200, 8_000)
    stuck_stop: float = 0.0
    check_liveness: bool = True
    renew_before_ms: tuple[tuple[str, int], ...] = ()

    def clock(self, party: str) -> ClockSpec:
        return dict(self.clocks).get(party, ClockSpec())
