"""`python -m simulations`: run seeds, replay one, or run the named fixtures.

    python -m simulations run --seeds N [--profile NAME] [--start S] [--workers W] [--json]
    python -m simulations replay SEED [--profile NAME]
    python -m simulations fixtures [--json]

`run` exits 1 when any seed violated an invariant; each violation names its seed, and
`replay SEED` prints that seed's full trace. Wall time here only measures speed: it never
reaches a simulated world.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence

import attrs

from ._faults import PROFILES
from ._fixtures import run_fixtures
from ._runner import Summary, run_many, run_seed


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m simulations", description=__doc__.split("\n")[0]
    )
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="run N random fault schedules")
    run.add_argument("--seeds", type=int, default=100)
    run.add_argument("--start", type=int, default=0, help="first seed")
    run.add_argument("--profile", choices=sorted(PROFILES), default="default")
    run.add_argument("--workers", type=int, default=1, help="processes (results are the same)")
    run.add_argument("--json", action="store_true")
    replay = commands.add_parser("replay", help="print one seed's trace")
    replay.add_argument("seed", type=int)
    replay.add_argument("--profile", choices=sorted(PROFILES), default="default")
    fixtures = commands.add_parser("fixtures", help="run the named MN0 fixtures")
    fixtures.add_argument("--json", action="store_true")
    return parser


def summary_json(summary: Summary) -> dict[str, object]:
    """The `run --json` object (keys as bench/BENCH.md requires, plus speed figures)."""
    seconds = max(summary.seconds, 1e-9)
    return {
        "seeds": summary.seeds,
        "profile": summary.profile,
        "steps": summary.steps,
        "checks": summary.checks,
        "seconds": round(summary.seconds, 3),
        "seeds_per_s": round(summary.seeds / seconds, 1),
        "simulated_hours_per_s": round(summary.simulated_ms / 3_600_000 / seconds, 2),
        "violations": [attrs.asdict(v) for v in summary.violations],
    }


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "run":
        if args.seeds < 1 or args.workers < 1:
            print("simulations: --seeds and --workers must be positive", file=sys.stderr)
            return 2
        seeds = range(args.start, args.start + args.seeds)
        summary = run_many(seeds, args.profile, workers=args.workers, timer=time.perf_counter)
        data = summary_json(summary)
        if args.json:
            print(json.dumps(data))
        else:
            for key in (
                "seeds",
                "profile",
                "steps",
                "checks",
                "seconds",
                "seeds_per_s",
                "simulated_hours_per_s",
            ):
                print(f"{key:<22} {data[key]}")
            print(f"{'violations':<22} {len(summary.violations)}")
            for v in summary.violations:
                print(f"  seed {v.seed} at {v.at_ms} ms: {v.invariant}: {v.detail}")
            if summary.violations:
                print(
                    f"reproduce: python -m simulations replay {summary.violations[0].seed}"
                    f" --profile {args.profile}"
                )
        return 1 if summary.violations else 0
    if args.command == "replay":
        result = run_seed(args.seed, args.profile, trace=True)
        for line in result.trace:
            print(line)
        print(
            f"# seed {result.seed}: {result.steps} steps, {result.checks} checks, "
            f"{len(result.violations)} violations"
        )
        for v in result.violations:
            print(f"# {v.at_ms} ms {v.invariant}: {v.detail}")
        return 1 if result.violations else 0
    results = run_fixtures()
    if args.json:
        print(
            json.dumps(
                {
                    "fixtures": [
                        {"name": r.name, "passed": r.passed, "failures": list(r.failures)}
                        for r in results
                    ]
                }
            )
        )
    else:
        for r in results:
            print(f"{'PASS' if r.passed else 'FAIL'}  {r.name}")
            for failure in r.failures:
                print(f"      {failure}")
    return 0 if all(r.passed for r in results) else 1
