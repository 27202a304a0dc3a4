"""Shared reporting for the benchmarks (see shared BENCH.md).

Scripts run as `python bench/NAME.py` from the repository root; each starts with
`sys.path.insert(0, str(Path(__file__).resolve().parent.parent))` under
`if __package__ in (None, "")` so `from bench._report import ...` works. Every script
builds a `Report`, fills `figures`, `ratios` and `notes`, and calls `emit`: a readable
table by default, exactly one JSON object on stdout with `--json`.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Callable, Sequence
from typing import Any

import attrs


@attrs.define
class Report:
    bench: str
    figures: dict[str, float] = attrs.field(factory=dict)
    ratios: dict[str, float] = attrs.field(factory=dict)
    notes: str = ""

    def emit(self, as_json: bool) -> None:
        if as_json:
            document: dict[str, Any] = {
                "bench": self.bench,
                "figures": self.figures,
                "ratios": self.ratios,
                "notes": self.notes,
            }
            sys.stdout.write(json.dumps(document) + "\n")
            return
        width = max((len(k) for k in [*self.figures, *self.ratios]), default=10)
        print(f"# {self.bench}")
        for key, value in self.figures.items():
            print(f"  {key:<{width}}  {value:>14,.2f}")
        for key, value in self.ratios.items():
            print(f"  {key:<{width}}  {value:>14.3f}  (ratio)")
        if self.notes:
            print(f"  notes: {self.notes}")


def parse_args(description: str, argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The flags every benchmark takes: `--json` and `--quick`."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--json", action="store_true", help="print one JSON object only")
    parser.add_argument("--quick", action="store_true", help="fewer rounds (< 30 s)")
    return parser.parse_args(argv)


def median_of_rounds(rounds: int, measure: Callable[[], float], warmup: int = 1) -> float:
    """Run `measure` `warmup` times unrecorded, then `rounds` times; return the median."""
    for _ in range(warmup):
        measure()
    return statistics.median(measure() for _ in range(rounds))


def percentile(samples: Sequence[float], fraction: float) -> float:
    """The `fraction` (0..1) percentile of `samples` by nearest rank."""
    ordered = sorted(samples)
    if not ordered:
        raise ValueError("no samples")
    index = min(len(ordered) - 1, max(0, round(fraction * len(ordered)) - 1))
    return ordered[index]


def log(message: str) -> None:
    """Progress goes to stderr so `--json` keeps stdout clean."""
    print(message, file=sys.stderr)
