"""Run one seed, many seeds, or one scenario, and report steps, checks and violations."""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor

import attrs

from supervision.leases import RULES, LeaseRules

from ._checker import Violation
from ._faults import draw_scenario
from ._model import Scenario
from ._world import World


@attrs.frozen
class RunResult:
    seed: int
    steps: int
    checks: int
    simulated_ms: int
    violations: tuple[Violation, ...]
    trace: tuple[str, ...] = ()


def run_scenario(
    scenario: Scenario, seed: int = 0, rules: LeaseRules = RULES, trace: bool = False
) -> tuple[RunResult, World]:
    """Play `scenario`; an exception inside the world is a violation, not a crash."""
    world = World(scenario, seed, rules, trace)
    try:
        world.run()
    except Exception as error:  # a machine raising is itself a finding
        world.checker.fail("exception", world.t, f"{type(error).__name__}: {error}")
    result = RunResult(
        seed=seed,
        steps=world.steps,
        checks=world.checker.checks,
        simulated_ms=scenario.duration_ms,
        violations=tuple(world.checker.violations),
        trace=tuple(world.trace or ()),
    )
    return result, world


def run_seed(
    seed: int, profile: str = "default", rules: LeaseRules = RULES, trace: bool = False
) -> RunResult:
    """Play the random schedule seed `seed` draws under `profile`."""
    result, _ = run_scenario(draw_scenario(seed, profile), seed, rules, trace)
    return result


@attrs.frozen
class Summary:
    """Many seeds: totals, every violation (each names its seed) and the wall time taken."""

    profile: str
    seeds: int
    steps: int
    checks: int
    simulated_ms: int
    seconds: float
    violations: tuple[Violation, ...]


def _run_chunk(args: tuple[list[int], str]) -> list[RunResult]:
    seeds, profile = args
    return [run_seed(seed, profile) for seed in seeds]


def run_many(
    seeds: range | list[int],
    profile: str = "default",
    *,
    workers: int = 1,
    timer: Callable[[], float] | None = None,
) -> Summary:
    """Run every seed (in `workers` processes when > 1). Results do not depend on `workers`:
    each seed is its own world. `timer` (e.g. `time.perf_counter`) only measures speed."""
    seeds = list(seeds)
    started = timer() if timer else 0.0
    if workers > 1 and len(seeds) > 1:
        chunks = [(seeds[i::workers], profile) for i in range(workers)]
        context = multiprocessing.get_context("forkserver")  # no fork of a threaded parent
        context.set_forkserver_preload(["simulations"])
        with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
            results = [r for chunk in pool.map(_run_chunk, chunks) for r in chunk]
    else:
        results = _run_chunk((seeds, profile))
    results.sort(key=lambda r: r.seed)
    return Summary(
        profile=profile,
        seeds=len(results),
        steps=sum(r.steps for r in results),
        checks=sum(r.checks for r in results),
        simulated_ms=sum(r.simulated_ms for r in results),
        seconds=(timer() - started) if timer else 0.0,
        violations=tuple(v for r in results for v in r.violations),
    )
