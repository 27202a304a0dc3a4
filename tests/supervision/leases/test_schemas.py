"""The MN0 wire shapes: round trips, unknown fields refused, bounds enforced."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from maia.core import MaiaError
from supervision.leases import (
    EvidenceSpool,
    MachineAssignment,
    MachineLeaseGrant,
    MachineLeaseReport,
    MachineLeaseRequest,
    NodeStatus,
    parse_wire,
    to_wire,
)

GRANT = {
    "assignmentId": "a1",
    "leaseEpoch": 1,
    "requestId": "n1.b1-1",
    "renewalSequence": 1,
    "revocationRevision": 0,
    "acknowledgedThrough": 0,
    "issuedAt": "2026-11-30T01:00:00.000Z",
    "expiresAt": "2026-11-30T01:00:30.000Z",
}
ASSIGNMENT = {
    "assignmentId": "assignment_1",
    "controlNodeId": "ctl",
    "registrationIncarnation": 1,
    "projectId": "project_1",
    "environmentId": "workspace_1",
    "environmentRevision": 3,
    "environmentDigest": "sha256:" + "ab" * 32,
}


def _samples() -> list[tuple[type[Any], dict[str, Any]]]:
    spool = EvidenceSpool("n1.a1").append(10, 0).status(5)
    report = MachineLeaseReport("a1", 1, "running", "n1.b1-1", 1, 0, spool)
    return [
        (MachineLeaseGrant, GRANT),
        (MachineAssignment, ASSIGNMENT),
        (MachineLeaseRequest, to_wire(MachineLeaseRequest("n1.b1-1", "n1", "a1", 1, "renew"))),
        (NodeStatus, to_wire(NodeStatus("n1", 1, 7, (report,)))),
    ]


@pytest.mark.parametrize(("cls", "wire"), _samples())
def test_round_trip(cls: type[Any], wire: dict[str, Any]) -> None:
    """Each shape parses from camelCase JSON and writes back the same object."""
    assert to_wire(parse_wire(cls, wire)) == wire


@pytest.mark.parametrize(("cls", "wire"), _samples())
def test_unknown_fields_are_refused(cls: type[Any], wire: dict[str, Any]) -> None:
    """A key the shape does not define fails with validation_failed naming the shape."""
    with pytest.raises(MaiaError) as caught:
        parse_wire(cls, {**wire, "surprise": 1})
    assert caught.value.code == "validation_failed"
    assert cls.__name__ in caught.value.message
    assert "surprise" in caught.value.message


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"expiresAt": "2026-11-30T01:00:26.999Z"}, "expiresAt"),  # below 27 s
        ({"expiresAt": "2026-11-30T01:01:00.001Z"}, "expiresAt"),  # above 60 s
        ({"leaseEpoch": 0}, "leaseEpoch"),
        ({"leaseEpoch": "1"}, "leaseEpoch"),
        ({"renewalSequence": True}, "renewalSequence"),
        ({"requestId": ""}, "requestId"),
        ({"issuedAt": "2026-11-30T01:00:00Z"}, "issuedAt"),  # no milliseconds
        ({"acknowledgedThrough": -1}, "acknowledgedThrough"),
    ],
)
def test_grant_refusals_name_the_field(change: dict[str, Any], field: str) -> None:
    """An out-of-bound or mistyped grant field is refused, and the error names it."""
    with pytest.raises(MaiaError) as caught:
        parse_wire(MachineLeaseGrant, {**GRANT, **change})
    assert caught.value.code == "validation_failed"
    assert field in caught.value.message


def test_grant_duration_bounds_are_inclusive() -> None:
    """Exactly 27 s and exactly 60 s are accepted; the duration is expiresAt - issuedAt."""
    low = parse_wire(MachineLeaseGrant, {**GRANT, "expiresAt": "2026-11-30T01:00:27.000Z"})
    high = parse_wire(MachineLeaseGrant, {**GRANT, "expiresAt": "2026-11-30T01:01:00.000Z"})
    assert (low.duration_ms, high.duration_ms) == (27_000, 60_000)


def test_assignment_digest_and_definition_key() -> None:
    """The environment digest must be sha256:; the definition key is the immutable triple."""
    assignment = parse_wire(MachineAssignment, ASSIGNMENT)
    assert assignment.definition_key == ("ctl", "workspace_1", 3)
    with pytest.raises(MaiaError, match="environmentDigest"):
        parse_wire(MachineAssignment, {**ASSIGNMENT, "environmentDigest": "md5:00"})


def test_running_report_must_name_its_grant() -> None:
    """A running report without appliedRequestId is refused."""
    wire = copy.deepcopy(_samples()[3][1])
    wire["reports"][0]["appliedRequestId"] = None
    wire["reports"][0]["appliedRenewalSequence"] = None
    with pytest.raises(MaiaError, match="running report"):
        parse_wire(NodeStatus, wire)


@pytest.mark.parametrize(
    ("report_change", "spool_change", "path"),
    [
        ({"appliedRenewalSequence": None}, {}, "reports[0].appliedRenewalSequence"),
        ({}, {"acknowledgedThrough": 2}, "reports[0].spool.acknowledgedThrough"),
        ({}, {"retainedBytes": 0}, "reports[0].spool.retainedBytes"),
        ({}, {"sourceId": "-bad"}, "reports[0].spool.sourceId"),
    ],
)
def test_cross_field_rules_name_the_nested_field(
    report_change: dict[str, Any], spool_change: dict[str, Any], path: str
) -> None:
    """A broken rule deep in a status is validation_failed at the field's full path."""
    wire = copy.deepcopy(_samples()[3][1])
    wire["reports"][0].update(report_change)
    wire["reports"][0]["spool"].update(spool_change)
    with pytest.raises(MaiaError) as caught:
        parse_wire(NodeStatus, wire)
    assert caught.value.code == "validation_failed"
    assert caught.value.details == {"path": path}
    assert caught.value.message.startswith(f"NodeStatus: {path}: ")


def test_impossible_date_names_its_field() -> None:
    """A timestamp of the right form but no real date (30 February) is refused by name."""
    with pytest.raises(MaiaError) as caught:
        parse_wire(MachineLeaseGrant, {**GRANT, "issuedAt": "2026-02-30T01:00:00.000Z"})
    assert caught.value.details == {"path": "issuedAt"}
    assert "not a real date" in caught.value.message


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=12,
)


@given(st.dictionaries(st.sampled_from(sorted(GRANT)), json_values, max_size=8))
def test_arbitrary_input_only_ever_raises_validation_failed(value: dict[str, Any]) -> None:
    """Whatever JSON arrives, parsing returns a grant or raises validation_failed."""
    try:
        parse_wire(MachineLeaseGrant, {**GRANT, **value})
    except MaiaError as error:
        code = error.code
    else:
        code = "validation_failed"
    assert code == "validation_failed"


def test_non_object_is_refused() -> None:
    """A JSON array where an object belongs is refused, not crashed on."""
    with pytest.raises(MaiaError, match="must be an object"):
        parse_wire(MachineLeaseGrant, [1, 2])  # type: ignore[arg-type]
