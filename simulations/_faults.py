"""Random fault schedules: a seed and a profile in, a `Scenario` out.

Profiles choose which faults a schedule may hold. Every draw comes from the seed's
`random.Random`; faults all end by `heal_ms`, after which the network is clean, processes
run and clocks are steady, so liveness is checked over the rest of the run.
"""

from __future__ import annotations

import random

import attrs

from ._model import CONTROL, ClockSpec, Fault, FaultKind, NetworkSpec, Scenario

FAULT_WINDOW_MS = 150_000
TAIL_MS = 130_000


@attrs.frozen
class Profile:
    name: str
    kinds: tuple[FaultKind, ...]
    faults: tuple[int, int] = (3, 12)
    loss: float = 0.05
    duplicate: float = 0.05
    spike: float = 0.03
    stuck_stop: float = 0.05
    unaware_node: float = 0.0
    eager_renewal: float = 0.3


_ALL = tuple(FaultKind)
PROFILES: dict[str, Profile] = {
    p.name: p
    for p in (
        Profile("default", _ALL),
        Profile("network", (FaultKind.PARTITION, FaultKind.LOSS, FaultKind.DELAY), loss=0.1),
        Profile("processes", (FaultKind.KILL, FaultKind.PAUSE), loss=0.0, spike=0.0),
        Profile("clocks", (FaultKind.WALL_STEP, FaultKind.SUSPEND), spike=0.0),
        Profile("failclosed", _ALL, unaware_node=0.5),
        Profile("calm", (), faults=(0, 0), loss=0.0, duplicate=0.0, spike=0.0, stuck_stop=0.0),
    )
}


def draw_scenario(seed: int, profile: str = "default") -> Scenario:
    """The scenario seed `seed` plays under `profile` (raises KeyError for an unknown one)."""
    spec = PROFILES[profile]
    rng = random.Random(seed)
    nodes = ("n1", "n2")
    parties = (CONTROL, *nodes)
    clocks = tuple(
        (
            party,
            ClockSpec(
                mono_ppm=rng.randint(-200, 200),
                wall_ppm=rng.randint(-500, 500),
                wall_offset_ms=rng.randint(-3_600_000, 3_600_000),
                suspend_aware=party == CONTROL or rng.random() >= spec.unaware_node,
            ),
        )
        for party in parties
    )
    faults = []
    for _ in range(rng.randint(*spec.faults) if spec.kinds else 0):
        kind = rng.choice(spec.kinds)
        at = rng.randint(5_000, FAULT_WINDOW_MS - 5_000)
        target = rng.choice(parties)
        duration = rng.randint(500, min(60_000, FAULT_WINDOW_MS - at))
        amount = 0
        if kind in (FaultKind.PARTITION, FaultKind.LOSS, FaultKind.DELAY):
            src = rng.choice(parties)
            dst = rng.choice([p for p in parties if p != src])
            target = f"{src}{rng.choice('|>')}{dst}"
            amount = rng.randint(20, 90) if kind is FaultKind.LOSS else rng.randint(500, 8_000)
        elif kind is FaultKind.WALL_STEP:
            amount = rng.choice((-1, 1)) * rng.randint(100, 20_000)
        faults.append(Fault(at, kind, target, duration, amount))
    faults.sort(key=lambda f: (f.at, f.kind.value, f.target))
    aware_nodes = sum(1 for party, c in clocks if party != CONTROL and c.suspend_aware)
    return Scenario(
        nodes=nodes,
        clocks=clocks,
        network=NetworkSpec(5, 200, spec.loss, spec.duplicate, spec.spike),
        faults=tuple(faults),
        heal_ms=FAULT_WINDOW_MS,
        duration_ms=FAULT_WINDOW_MS + TAIL_MS,
        grant_ttls_ms=(27_000, 30_000, 45_000, 60_000),
        stuck_stop=spec.stuck_stop,
        check_liveness=aware_nodes > 0,
        renew_before_ms=tuple(
            (node, 45_000 if rng.random() < spec.eager_renewal else 15_000) for node in nodes
        ),
    )
