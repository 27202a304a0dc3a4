"""Schema documents of operations, and the checks at an op's edges.

`schema_document(op_id, "input")` is the JSON Schema of the op's normalized parameters;
`"output"` is the CLI's full ordinary JSON response: the envelope `{"ok": true, "result"}` or
`{"ok": false, "error"}` (spec: Schema-only inspection). `decode_input` is the API entry
check; `encode_output` the JSON of a result.
"""

from __future__ import annotations

from typing import Any, Final, Literal

from maia.core._check import check
from maia.core._encode import to_json
from maia.core._errors import ERROR_CODES, MaiaError

from ._jsonschema import SchemaBuilder, document
from ._registry import ERROR_SCHEMA_REF, OperationDescriptor

# Codes the CLI's envelope carries for any command, raised by the client rather than the op:
# a Node of another protocol or registry (the hello), an answer or request over the frame.
CLIENT_ERRORS: Final = ("frame_too_large", "protocol_incompatible")


def error_schema(codes: tuple[str, ...] | None = None) -> dict[str, Any]:
    """The error object of both envelopes; `codes` narrows `code` to an op's typed errors."""
    known = sorted(ERROR_CODES) if codes is None else list(codes)
    return {
        "type": "object",
        "title": "Error",
        "description": "A failure with a code from Maia's closed set.",
        "properties": {
            "code": {"type": "string", "enum": known},
            "message": {"type": "string"},
            "retryable": {"type": "boolean"},
            "details": {"type": "object"},
        },
        "required": ["code", "message", "retryable", "details"],
        "additionalProperties": False,
    }


def error_document() -> dict[str, Any]:
    """The standalone error schema that every `errorSchemaRef` names."""
    return document(error_schema(), SchemaBuilder(), ERROR_SCHEMA_REF)


def operation_schema(
    op: OperationDescriptor, which: Literal["input", "result", "output"]
) -> dict[str, Any]:
    """The schema document of an op's input, bare result, or CLI output envelope.

    Raises TypeError when the op has no schema class for it (the registry refuses those).
    """
    cls = op.input_type if which == "input" else op.output_type
    if cls is None:
        raise TypeError(f"{op.operation_id} has no {which} schema")
    builder = SchemaBuilder()
    if which == "input":
        return document(builder.object_schema(cls), builder, op.input_schema_ref)
    if which == "result":
        return document(builder.object_schema(cls), builder, op.output_schema_ref + ":result")
    result = builder.ref(cls)
    root = {
        "title": f"{op.operation_id} output",
        "description": "The CLI's JSON response: the result on success, the error otherwise.",
        "oneOf": [
            {
                "type": "object",
                "properties": {"ok": {"const": True}, "result": result},
                "required": ["ok", "result"],
                "additionalProperties": False,
            },
            {
                "type": "object",
                "properties": {"ok": {"const": False}, "error": {"$ref": "#/$defs/Error"}},
                "required": ["ok", "error"],
                "additionalProperties": False,
            },
        ],
    }
    builder.defs["Error"] = error_schema(tuple(sorted({*op.errors, *CLIENT_ERRORS})))
    return document(root, builder, op.output_schema_ref)


def schema_document(operation_id: str, which: Literal["input", "output"]) -> dict[str, Any]:
    """The `--schema` document of a registered op. Raises `unknown_method` otherwise."""
    from . import _operations  # the registry imports this module

    op = _operations.REGISTRY.get(operation_id)
    if op is None:
        raise MaiaError("unknown_method", f"no operation named {operation_id}")
    if which not in ("input", "output"):
        raise ValueError(f"which must be input or output, not {which!r}")
    return operation_schema(op, which)


def decode_input(descriptor: OperationDescriptor, params: object) -> Any:
    """Check an op's incoming params and build its input instance.

    Raises `validation_failed` naming the path of the first failure (unknown keys refused).
    """
    if descriptor.input_type is None:
        raise TypeError(f"{descriptor.operation_id} has no input schema")
    return check(descriptor.input_type, params, root="params")


def encode_output(descriptor: OperationDescriptor, value: Any) -> dict[str, Any]:
    """The JSON-safe dict of an op's result. Raises TypeError if `value` is not its type."""
    if descriptor.output_type is None or not isinstance(value, descriptor.output_type):
        raise TypeError(f"{descriptor.operation_id} returns {descriptor.output_type!r}")
    out: dict[str, Any] = to_json(value)
    return out
