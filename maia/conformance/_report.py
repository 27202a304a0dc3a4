"""The verifier's report: per op its failures, the errors reached and those unreachable
(with their reasons), and the summary lines `maia contract fixtures verify` prints."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import attrs


@attrs.frozen
class OpReport:
    """One op's outcome: its failures (none: covered), what its set reached and why the rest
    cannot be reached."""

    operation: str
    failures: tuple[str, ...]
    declared: int = 0
    errors: frozenset[str] = frozenset()  # the op's declared errors
    reached: frozenset[str] = frozenset()
    unreachable: Mapping[str, str] = attrs.field(factory=dict)
    cases: int = 0
    seconds: float = 0.0


@attrs.frozen
class VerifyReport:
    """Every op's report, the problems no op owns, and the pending sets still waiting."""

    ops: tuple[OpReport, ...]
    problems: tuple[str, ...] = ()  # not about one op (unreadable files)
    waiting: tuple[str, ...] = ()  # pending sets whose op is not registered yet
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.problems and not any(r.failures for r in self.ops)

    def lines(self) -> Iterator[str]:
        """The human report: failures per op, then the summary and the unreachable list."""
        for problem in self.problems:
            yield f"FAIL fixtures: {problem}"
        for report in self.ops:
            for failure in report.failures:
                yield f"FAIL {report.operation}: {failure}"
        covered = sum(1 for r in self.ops if not r.failures)
        reached = sum(len(r.reached) for r in self.ops)
        declared = sum(r.declared for r in self.ops)
        unreachable = [why for r in self.ops for code, why in r.unreachable.items()
                       if code in r.errors]  # fmt: skip
        pending = sum(1 for why in unreachable if why.startswith("NOT YET REACHED"))
        waivers = sum(len(r.unreachable) for r in self.ops) - len(unreachable)
        cases = sum(r.cases for r in self.ops)
        yield (f"ops covered {covered}/{len(self.ops)}; errors reached {reached}/{declared}, "
               f"unreachable {len(unreachable)} ({pending} not yet reached), other waivers "
               f"{waivers}; {cases} cases in {self.seconds:.1f} s")  # fmt: skip
        grouped: dict[tuple[str, str], list[str]] = {}
        for report in self.ops:
            for code, why in report.unreachable.items():
                grouped.setdefault((code, why), []).append(report.operation)
        if self.waiting:
            yield f"pending sets, their ops not registered yet: {', '.join(self.waiting)}"
        for (code, why), ops in sorted(grouped.items()):
            where = f"{len(ops)} ops" if len(ops) > 3 else ", ".join(ops)
            yield f"unreachable {code} ({where}): {why}"

    def to_json(self) -> dict[str, Any]:
        operations = {
            r.operation: {"failures": list(r.failures), "reached": sorted(r.reached),
                          "declared": r.declared, "unreachable": dict(r.unreachable),
                          "cases": r.cases, "seconds": round(r.seconds, 2)}
            for r in self.ops
        }  # fmt: skip
        return {"ok": self.ok, "problems": list(self.problems), "seconds": self.seconds,
                "pending": list(self.waiting),
                "operations": operations}  # fmt: skip
