"""What a fixture set must hold, checked against the descriptor before any Node runs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from maia.conformance import FixtureFormatError, load_common, load_fixture_set, static_problems
from maia.protocol import REGISTRY

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "ops"
PREVIOUS = {
    **json.loads((FIXTURES / "_previous.lock.json").read_text()),
    "inputSchemas": json.loads((FIXTURES / "_previous.schemas.json").read_text())["inputSchemas"],
}


def _problems(tmp_path: Path, op: str, body: dict[str, Any]) -> list[str]:
    folder = tmp_path / op
    folder.mkdir()
    (folder / "cases.json").write_text(json.dumps({"operation": op, **body}))
    descriptor = REGISTRY.get(op)
    assert descriptor is not None
    return static_problems(load_fixture_set(folder / "cases.json"), descriptor, PREVIOUS)


def test_every_committed_set_holds_what_its_op_needs() -> None:
    """Each committed set passes the static checks against its op's descriptor."""
    for path in sorted(FIXTURES.glob("*/cases.json")):
        fixture = load_fixture_set(path)
        descriptor = REGISTRY.get(fixture.operation)
        assert descriptor is not None, path
        assert static_problems(fixture, descriptor, PREVIOUS) == [], path


def test_an_error_both_reached_and_unreachable_is_refused(tmp_path: Path) -> None:
    """A reason for an error a case reaches contradicts the case: refused, named."""
    problems = _problems(tmp_path, "session.show", {
        "cases": [{"name": "ok", "params": {}, "expect": {}},
                  {"name": "x", "params": {}, "expect": {"error": "resource_not_found"}}],
        "unreachable": {"resource_not_found": "a reason long enough to count"},
        "previous": {"params": {}, "expect": {}}})  # fmt: skip
    assert problems == ["resource_not_found is both reached by a case and declared unreachable"]


def test_undeclared_errors_and_events_are_refused(tmp_path: Path) -> None:
    """A case expecting an error or event the op does not declare fails the set."""
    problems = _problems(tmp_path, "session.rename", {
        "cases": [{"name": "ok", "params": {"commandId": "c"},
                   "expect": {"events": ["session.renamed", "session.created"]}},
                  {"name": "x", "params": {}, "expect": {"error": "turn_queue_full"}}],
        "previous": {"params": {}, "expect": {}}})  # fmt: skip
    assert "a case expects turn_queue_full, which session.rename does not declare" in problems
    assert "a case expects event session.created, which the op does not declare" in problems
    assert "no stale-revision case (stale: true, revision or storage conflict)" in problems
    assert "declared error storage_conflict has no case (and no unreachable reason)" in problems


def test_a_confirm_without_its_preview_and_an_unchanged_op_refusing_old_input(
    tmp_path: Path,
) -> None:
    """A confirm's ok case must run its preview first; an op unchanged since the previous
    registry must decode that registry's payload."""
    problems = _problems(tmp_path, "routine.show", {
        "cases": [{"name": "ok", "params": {}, "expect": {}}],
        "previous": {"params": {}, "expect": {"error": "validation_failed"}}})  # fmt: skip
    assert "the op's input is unchanged since the previous registry: its payload must decode" in (
        problems
    )
    confirm = _problems(tmp_path, "routine.disable.confirm", {
        "cases": [{"name": "ok", "params": {"commandId": "c"}, "expect": {}}],
        "unreachable": {"stale": "waived for this test only, long enough"}})  # fmt: skip
    assert "no ok case confirms after its preview routine.disable.preview" in confirm


def test_a_common_error_without_probe_or_reason_is_refused(tmp_path: Path) -> None:
    """_common.json must name a probe or a reason for every common error."""
    path = tmp_path / "_common.json"
    path.write_text(json.dumps({"probes": {"invalid_request": "envelope"}, "unreachable": {}}))
    with pytest.raises(FixtureFormatError, match="common error validation_failed"):
        load_common(path)
