"""Answers checked against the registry's own schema documents (JSON Schema 2020-12).

A result against the op's result schema; an error against the error shape with `code`
narrowed to the op's declared errors, so an undeclared code is a failure.
"""

from __future__ import annotations

import functools
from typing import Any

from maia.protocol import OperationDescriptor, error_document, operation_schema


@functools.cache
def _validator(op_id: str, which: str, op: OperationDescriptor) -> Any:
    from jsonschema import Draft202012Validator  # a maintainer tool's dependency (dev extra)

    if which == "error":
        return Draft202012Validator(error_document())
    return Draft202012Validator(operation_schema(op, "result"))


def _problems(validator: Any, value: Any) -> list[str]:
    found = sorted(validator.iter_errors(value), key=lambda e: list(e.absolute_path))
    return [f"{'.'.join(map(str, e.absolute_path)) or '(root)'}: {e.message}" for e in found[:3]]


def result_problems(op: OperationDescriptor, result: Any) -> list[str]:
    """Why `result` does not validate against the op's result schema (empty: it does)."""
    return _problems(_validator(op.operation_id, "result", op), result)


def error_problems(op: OperationDescriptor, error: Any) -> list[str]:
    """Why `error` is not one of the op's declared errors in the error shape."""
    problems = _problems(_validator(op.operation_id, "error", op), error)
    code = error.get("code") if isinstance(error, dict) else None
    if code not in op.errors:
        problems.append(f"code {code} is not among {op.operation_id}'s declared errors")
    return problems
