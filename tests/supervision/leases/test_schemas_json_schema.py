"""The MN0 shapes yield valid JSON Schemas through the registry's generator, and the schemas
agree with `parse_wire` on what is structurally valid."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis_jsonschema import from_schema

from maia.protocol._jsonschema import SchemaBuilder, document
from supervision.leases import (
    EvidenceSpool,
    EvidenceSpoolStatus,
    MachineAssignment,
    MachineLeaseGrant,
    MachineLeaseReport,
    MachineLeaseRequest,
    NodeStatus,
    parse_wire,
    to_wire,
)

from .test_schemas import ASSIGNMENT, GRANT

SHAPES = [
    MachineAssignment,
    MachineLeaseRequest,
    MachineLeaseGrant,
    MachineLeaseReport,
    NodeStatus,
    EvidenceSpoolStatus,
]


def _document(cls: type[Any]) -> dict[str, Any]:
    builder = SchemaBuilder()
    return document(builder.object_schema(cls), builder, f"urn:maia:mn0:{cls.__name__}")


SCHEMAS = {cls: _document(cls) for cls in SHAPES}


def _schema(cls: type[Any]) -> dict[str, Any]:
    return SCHEMAS[cls]


def _sample(cls: type[Any]) -> dict[str, Any]:
    spool = EvidenceSpool("n1.a1").append(10, 0).status(5)
    report = MachineLeaseReport("a1", 1, "running", "n1.b1-1", 1, 0, spool)
    samples: dict[type[Any], dict[str, Any]] = {
        MachineAssignment: ASSIGNMENT,
        MachineLeaseRequest: to_wire(MachineLeaseRequest("n1.b1-1", "n1", "a1", 1, "renew")),
        MachineLeaseGrant: GRANT,
        MachineLeaseReport: to_wire(report),
        NodeStatus: to_wire(NodeStatus("n1", 1, 7, (report,))),
        EvidenceSpoolStatus: to_wire(spool),
    }
    return samples[cls]


@pytest.mark.parametrize("cls", SHAPES, ids=lambda cls: cls.__name__)
def test_every_shape_has_a_valid_2020_12_schema(cls: type[Any]) -> None:
    """The generator's document passes the metaschema, accepts the sample, refuses extras."""
    schema = _schema(cls)
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    wire = _sample(cls)
    validator.validate(wire)
    assert to_wire(parse_wire(cls, wire)) == wire
    assert not validator.is_valid({**wire, "surprise": 1})
    assert schema["additionalProperties"] is False
    assert set(schema["required"]) == set(wire)  # every MN0 field is required


def test_the_schema_carries_the_field_constraints() -> None:
    """Wire ids, counts, timestamps, digests and enums come out as the metadata says."""
    grant = _schema(MachineLeaseGrant)["properties"]
    assert "durationMs" not in grant  # derived from the timestamps, never on the wire
    assert grant["leaseEpoch"]["minimum"] == 1
    assert grant["acknowledgedThrough"]["minimum"] == 0
    assert grant["requestId"]["maxLength"] == 128
    assert grant["issuedAt"]["pattern"].startswith("^\\d{4}")
    assert _schema(MachineAssignment)["properties"]["environmentDigest"]["pattern"].startswith(
        "^sha256:"
    )
    report = _schema(MachineLeaseReport)["properties"]
    assert report["phase"]["enum"] == ["starting", "running", "stopping", "stopped"]
    assert {"type": "null"} in report["appliedRequestId"]["anyOf"]


def _ends_cleanly(value: Any) -> bool:
    # ECMA-262's `$` refuses a final newline that Python's regex would accept; the runtime
    # follows ECMA, so such generated strings are not schema-valid in the spec's sense.
    if isinstance(value, str):
        return not value.endswith("\n")
    if isinstance(value, dict):
        return all(_ends_cleanly(v) for v in value.values())
    return True


@pytest.mark.parametrize("cls", [MachineAssignment, MachineLeaseRequest], ids=lambda c: c.__name__)
@settings(max_examples=25, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_schema_valid_values_parse(cls: type[Any], data: st.DataObject) -> None:
    """A value generated from a shape without cross-field rules always parses and round-trips."""
    wire = data.draw(from_schema(_schema(cls)).filter(_ends_cleanly))
    assert isinstance(wire, dict)
    assert to_wire(parse_wire(cls, wire)) == wire
