"""The simulation harness replays from a seed exactly (docs/simulation.md): `python -m
simulations replay SEED` prints the same trace in processes with different hash seeds (no
set or dict order leaks in), and `run --json` counts the same steps, checks and violations
with one worker and with two."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

TIMEOUT_S = 120


def _simulations(*args: str, hash_seed: int) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "simulations", *args],
        capture_output=True, text=True, timeout=TIMEOUT_S, check=False,
        env={**os.environ, "PYTHONHASHSEED": str(hash_seed)},
    )  # fmt: skip
    assert done.returncode in (0, 1), done.stderr
    return done.stdout


@pytest.mark.parametrize("profile", ["default", "processes", "clocks"])
def test_a_seed_replays_byte_for_byte_under_any_hash_seed(profile: str) -> None:
    """Two replays of one seed, PYTHONHASHSEED 1 and 2: the same trace and verdict."""
    first = _simulations("replay", "11", "--profile", profile, hash_seed=1)
    second = _simulations("replay", "11", "--profile", profile, hash_seed=2)
    assert "# seed 11:" in first
    assert first == second


def test_a_run_counts_the_same_with_one_worker_or_two() -> None:
    """`run --seeds 24 --json`: steps, checks and violations equal across workers and hash
    seeds."""
    runs = [json.loads(_simulations("run", "--seeds", "24", "--json", "--workers", str(w),
                                    hash_seed=h)) for w, h in ((1, 3), (2, 4))]  # fmt: skip
    one, two = ({k: r[k] for k in ("seeds", "steps", "checks", "violations")} for r in runs)
    assert one == two
    assert one["steps"] > 0
