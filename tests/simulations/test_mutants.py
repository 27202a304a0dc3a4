"""Planted bugs: with one lease rule swapped for the broken variant, the harness reports a
violation of the invariant that rule protects."""

from __future__ import annotations

import pytest

from simulations import run_seed
from supervision.leases import LeaseRules

MUTANTS = {
    "deadline anchored at receive": (
        LeaseRules(deadline_anchor=lambda first_send, receive: receive),
        "deadline_after_horizon",
    ),
    "a shorter renewal lowers the horizon": (
        LeaseRules(next_horizon=lambda current, candidate: candidate),
        "deadline_after_horizon",
    ),
    "replacement launched on expiry without cleanup": (
        LeaseRules(may_replace=lambda reconciled, horizon_reached: reconciled or horizon_reached),
        "two_executions",
    ),
    "replacement launched on expiry, seen at the launch": (
        LeaseRules(may_replace=lambda reconciled, horizon_reached: reconciled or horizon_reached),
        "replacement_before_cleanup",
    ),
    "barrier cleared by a report confirming an older grant": (
        LeaseRules(barrier_clears=lambda confirmed, barrier: True),
        "placement_without_item9",
    ),
}


@pytest.mark.parametrize("name", sorted(MUTANTS))
def test_the_harness_catches_the_planted_bug(name: str) -> None:
    """Within the first 40 seeds the mutant breaks its invariant; the real rule never does."""
    rules, invariant = MUTANTS[name]
    caught = None
    for seed in range(40):
        found = [v for v in run_seed(seed, rules=rules).violations if v.invariant == invariant]
        if found:
            caught = seed
            break
    assert caught is not None, f"{name}: no seed broke {invariant}"
    assert run_seed(caught).violations == ()
