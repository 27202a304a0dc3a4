"""What a fixture set must hold for its op, read from the descriptor (no Node needed).

Every declared error is a case, a common probe or a reasoned `unreachable` entry (never
both a case and unreachable); every declared event is expected by an ok case (or
unreachable as `event:<type>`), and no case expects an undeclared one; an op with revision
fields has a stale-revision case; a confirm has an ok case that ran its preview first; an
op present in the previous registry has its `previous` payload (an unchanged op's must
decode); the set names only registered ops.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from maia.core import digest_json
from maia.protocol import COMMON_ERRORS, REGISTRY, OperationDescriptor, operation_schema

from ._format import Case, FixtureSet

STALE_ERRORS = frozenset({"revision_conflict", "storage_conflict"})
DECODE_REFUSALS = frozenset({"validation_failed", "invalid_request"})
_NOT_ERRORS = frozenset({"result", "stale"})  # waivers of the ok and stale-revision cases


def _all_cases(fixture: FixtureSet) -> list[Case]:
    return [*fixture.cases, *([fixture.previous] if fixture.previous else [])]


def _preview_of(op_id: str) -> str | None:
    if op_id.endswith(".confirm"):
        return op_id.removesuffix(".confirm") + ".preview"
    return None


def static_problems(fixture: FixtureSet, op: OperationDescriptor,
                    previous: Mapping[str, Any]) -> list[str]:  # fmt: skip
    """Why `fixture` cannot cover `op`, before anything runs (`previous`: the previous
    registry's lock, with its ops' `inputSchemas`)."""
    problems: list[str] = []
    declared = set(op.errors)
    cases = fixture.cases
    covered = {c.expect.error for c in cases if c.expect.error is not None}
    unreachable_errors = {
        k for k in fixture.unreachable if k not in _NOT_ERRORS and not k.startswith("event:")
    }
    for code in sorted(covered - declared):
        problems.append(f"a case expects {code}, which {op.operation_id} does not declare")
    for code in sorted(unreachable_errors - declared):
        problems.append(f"unreachable names {code}, which {op.operation_id} does not declare")
    for code in sorted(unreachable_errors & covered):
        problems.append(f"{code} is both reached by a case and declared unreachable")
    specific = declared - set(COMMON_ERRORS)
    for code in sorted(specific - covered - unreachable_errors):
        problems.append(f"declared error {code} has no case (and no unreachable reason)")
    if not any(c.expect.ok for c in cases) and "result" not in fixture.unreachable:
        problems.append("no case with a valid input and its result")
    expected_events = {e for c in cases if c.expect.ok for e in c.expect.events}
    for event in sorted(expected_events - set(op.event_types)):
        problems.append(f"a case expects event {event}, which the op does not declare")
    for event in sorted(set(op.event_types) - expected_events):
        if f"event:{event}" not in fixture.unreachable:
            problems.append(f"declared event {event} is expected by no case")
    if (
        op.revision_fields
        and "stale" not in fixture.unreachable
        and not any(c.stale and c.expect.error in STALE_ERRORS for c in cases)
    ):
        problems.append("no stale-revision case (stale: true, revision or storage conflict)")
    preview = _preview_of(op.operation_id)
    if op.confirmation == "required":
        ran_preview = any(s.kind == "op" and s.op == preview for s in fixture.setup)
        if not (
            preview in REGISTRY
            and any(
                c.expect.ok and (ran_preview or any(s.op == preview for s in c.setup))
                for c in cases
            )
        ):
            problems.append(f"no ok case confirms after its preview {preview}")
    if op.idempotency == "required" and not any(
        c.expect.ok and c.replay and "commandId" in c.params for c in cases
    ):
        problems.append("no ok case with a commandId to replay")
    problems += _previous_problems(fixture, op, previous)
    for case in _all_cases(fixture):
        for step in (*fixture.setup, *case.setup):
            if step.kind == "op" and step.op not in REGISTRY:
                problems.append(f"case {case.name!r}: setup calls unknown op {step.op}")
    return problems


def _previous_problems(fixture: FixtureSet, op: OperationDescriptor,
                       previous: Mapping[str, Any]) -> list[str]:  # fmt: skip
    before = previous.get("operations", {}).get(op.operation_id)
    if before is None:
        return []  # added since the previous registry: nothing older to decode
    if fixture.previous is None:
        return ["no previous-registry payload (previous), though the op existed then"]
    unchanged = before.get("digest") == _digest_now(op) or previous.get("inputSchemas", {}).get(
        op.operation_id
    ) == operation_schema(op, "input")
    if unchanged and fixture.previous.expect.error in DECODE_REFUSALS:
        return ["the op's input is unchanged since the previous registry: its payload must decode"]
    return []


def _digest_now(op: OperationDescriptor) -> str:
    """The op's digest as the lock computes it (`lock_document`)."""
    return digest_json({**op.projection(), "inputSchema": operation_schema(op, "input"),
                        "outputSchema": operation_schema(op, "result")})  # fmt: skip
