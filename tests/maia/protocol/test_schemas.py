"""Generated JSON Schemas: valid 2020-12 documents that agree with the runtime check."""

from __future__ import annotations

import functools
import json
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis_jsonschema import from_schema

from maia.protocol import (
    REGISTRY,
    MaiaError,
    Session,
    decode_input,
    encode_output,
    error_document,
    operation_schema,
    schema_document,
)
from maia.protocol._ops_session import SessionShowOutput

OPS = [op.operation_id for op in REGISTRY]
# Ops whose inputs cover ids, enums, lists, ranges, trimmed text, cross-field rules, unions.
SAMPLE = [
    "session.create",
    "session.list",
    "session.wait",
    "session.rename",
    "turn.send",
    "turn.cancel",
    "receipt.get",
    "events.read",
    "project.add",
    "reference.resolve",
]


@pytest.mark.parametrize("operation_id", OPS)
def test_every_schema_is_valid_2020_12(operation_id: str) -> None:
    """Input, result and output documents of every op pass the 2020-12 metaschema."""
    op = REGISTRY.get(operation_id)
    assert op is not None
    for which in ("input", "result", "output"):
        doc = operation_schema(op, which)
        jsonschema.Draft202012Validator.check_schema(doc)
        assert doc["$schema"] == "https://json-schema.org/draft/2020-12/schema"
        assert "v1alpha1" in doc["$id"]
        text = json.dumps(doc)
        assert '"$ref": "http' not in text  # references are bundled, never fetched
    jsonschema.Draft202012Validator.check_schema(error_document())


def test_schema_document_is_deterministic_and_refuses_unknown_ops() -> None:
    """The same op gives the same bytes twice; an unregistered op is unknown_method."""
    first = json.dumps(schema_document("session.create", "input"))
    assert first == json.dumps(schema_document("session.create", "input"))
    with pytest.raises(MaiaError) as caught:
        schema_document("session.nope", "input")
    assert caught.value.code == "unknown_method"


def _strings_end_cleanly(value: Any) -> bool:
    # Python's regex `$` matches before a final newline where ECMA-262's does not; the
    # runtime follows ECMA, so such generated strings are not schema-valid in the spec's sense.
    if isinstance(value, str):
        return not value.endswith("\n")
    if isinstance(value, dict):
        return all(_strings_end_cleanly(v) for v in value.values())
    if isinstance(value, list):
        return all(_strings_end_cleanly(v) for v in value)
    return True


@functools.cache
def _strategy(operation_id: str) -> st.SearchStrategy[Any]:
    schema = schema_document(operation_id, "input")
    return from_schema(schema).filter(_strings_end_cleanly)


@pytest.mark.parametrize("operation_id", SAMPLE)
@settings(max_examples=20, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_generated_instances_pass_and_extra_key_is_refused(
    operation_id: str, data: st.DataObject
) -> None:
    """Instances generated from an op's input schema pass its runtime check; one extra key fails."""
    op = REGISTRY.get(operation_id)
    assert op is not None
    instance = data.draw(_strategy(operation_id))
    decoded = decode_input(op, instance)
    assert isinstance(decoded, op.input_type)  # type: ignore[arg-type]
    with pytest.raises(MaiaError) as caught:
        decode_input(op, {**instance, "zzUnknownKey": 1})
    assert caught.value.details == {"path": "zzUnknownKey"}


def test_encoded_result_validates_against_its_output_schema() -> None:
    """encode_output's JSON of a result, in the CLI envelope, validates against --schema."""
    op = REGISTRY.get("session.show")
    assert op is not None
    session = Session(
        session_id="session_1",
        project_id="project_1",
        executor="builtin:echo",
        state="idle",
        revision=1,
        created_at="2026-11-30T00:00:00.000Z",
        updated_at="2026-11-30T00:00:00.000Z",
        cwd="/home/u/p",
        labels=("team=infra",),
        title="Fix the build",
    )
    result = encode_output(op, SessionShowOutput(session=session))
    validator = jsonschema.Draft202012Validator(schema_document("session.show", "output"))
    validator.validate({"ok": True, "result": result})
    validator.validate(
        {
            "ok": False,
            "error": {
                "code": "resource_not_found",
                "message": "session session_1 does not exist",
                "retryable": False,
                "details": {},
            },
        }
    )
    assert not validator.is_valid({"ok": True, "result": {**result, "extra": 1}})
