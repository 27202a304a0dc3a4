"""Refusals that name what they refuse, whatever raised them.

A handler's `resource_not_found` comes from many layers (the service, an actor, storage), and
most know the ID they missed but not the input field that held it; the API's answer names
that field (`details.path`, and the message starts with it), as a schema refusal does and as
the CLI did. An `invalid_state` names the resource, its ID, its state and the event refused
(the error table's `{resource} {id} is {state}`; the transition tables' refusals); one raised
outside a table lacks the event, which is the operation refused. Both are completed here,
once, from the request's own input.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from maia.protocol import MaiaError, to_json


def _fields(value: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    """(path, value) of every field of a wire object, nested objects as `a.b`."""
    if isinstance(value, dict):
        for key, item in value.items():
            path = f"{prefix}{key}"
            yield path, item
            yield from _fields(item, f"{path}.")


def _field_holding(params: Any, value: object) -> str | None:
    """The wire path of the input field whose value is `value` (the first one), or None."""
    if not isinstance(value, str) or not _attrs_like(params):
        return None
    return next((path for path, item in _fields(to_json(params)) if item == value), None)


def _attrs_like(params: Any) -> bool:
    return hasattr(type(params), "__attrs_attrs__")


def completed_refusal(error: MaiaError, method: str, params: Any) -> MaiaError:
    """`error` with the details its code promises, where the input can supply them."""
    details = error.details
    if error.code == "resource_not_found" and "path" not in details:
        path = _field_holding(params, details.get("id"))
        if path is not None:
            message = error.message if error.message.startswith(f"{path}: ") else (
                f"{path}: {error.message}")  # fmt: skip
            return MaiaError(error.code, message, {**details, "path": path})
    if error.code == "invalid_state" and "event" not in details:
        more: dict[str, Any] = {"event": method}
        resource = details.get("resource")
        if "id" not in details and isinstance(resource, str) and _attrs_like(params):
            found = to_json(params).get(f"{resource}Id")
            if isinstance(found, str):
                more["id"] = found
        return MaiaError(error.code, error.message, {**details, **more})
    return error
