"""Random fault schedules: 1,000 seeds without a violation, and determinism by seed."""

from __future__ import annotations

import pytest

from simulations import PROFILES, draw_scenario, run_many, run_seed


def test_one_thousand_seeds_without_a_violation() -> None:
    """Seeds 0-999 of the default profile break no invariant (two worker processes)."""
    summary = run_many(range(1_000), "default", workers=2)
    assert summary.seeds == 1_000
    assert summary.violations == ()
    assert summary.checks > summary.seeds * 100  # the invariants really were checked


@pytest.mark.parametrize("profile", sorted(set(PROFILES) - {"default"}))
def test_other_profiles_hold(profile: str) -> None:
    """A handful of seeds of every other profile break no invariant either."""
    summary = run_many(range(15), profile)
    assert summary.violations == ()


def test_same_seed_gives_the_same_trace() -> None:
    """Running one seed twice yields an identical, non-trivial trace."""
    first = run_seed(41, trace=True)
    second = run_seed(41, trace=True)
    assert first.trace == second.trace
    assert len(first.trace) > 100
    assert first.steps == second.steps


def test_different_seeds_draw_different_schedules() -> None:
    """The seed really drives the schedule: two seeds give two fault lists."""
    assert draw_scenario(1).faults != draw_scenario(2).faults


def test_workers_do_not_change_results() -> None:
    """Splitting seeds over processes gives the same totals as one process."""
    alone = run_many(range(6), "default", workers=1)
    split = run_many(range(6), "default", workers=2)
    assert (alone.steps, alone.checks, alone.violations) == (
        split.steps,
        split.checks,
        split.violations,
    )
