"""`python -m simulations` as a user runs it: real subprocesses, JSON on stdout."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "simulations", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_run_json_has_the_bench_keys() -> None:
    """`run --seeds 5 --json` prints one object with seeds, steps, seconds, violations."""
    done = _run("run", "--seeds", "5", "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["seeds"] == 5
    assert data["violations"] == []
    assert data["steps"] > 0
    assert {"checks", "seconds", "seeds_per_s", "simulated_hours_per_s"} <= set(data)


def test_fixtures_json_lists_all_fifteen() -> None:
    """`fixtures --json` reports every named fixture as passed."""
    done = _run("fixtures", "--json")
    assert done.returncode == 0, done.stderr
    fixtures = json.loads(done.stdout)["fixtures"]
    assert len(fixtures) == 15
    assert all(f["passed"] for f in fixtures)


def test_replay_prints_the_trace_of_a_seed() -> None:
    """`replay 3` prints the same trace twice and ends with the seed's summary."""
    first, second = _run("replay", "3"), _run("replay", "3")
    assert first.returncode == 0, first.stderr
    assert first.stdout == second.stdout
    assert "# seed 3:" in first.stdout.splitlines()[-1]


def test_bad_arguments_are_refused() -> None:
    """An unknown profile or a non-positive seed count exits non-zero with a message."""
    assert _run("run", "--profile", "nope").returncode == 2
    zero = _run("run", "--seeds", "0")
    assert zero.returncode == 2
    assert "positive" in zero.stderr
