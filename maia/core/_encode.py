"""The JSON projection of schema instances: attrs objects to plain JSON-safe values.

Optional fields holding None are omitted (they were absent on the wire); nullable ones are
written as `null`. An optional list left at its empty default is omitted too when the schema
asks for at least one item (`session.wait`'s `states`): absent is its only valid spelling.
Tuples become lists. Nothing here checks limits: outputs are built by our
own code, and the tests check them against their schemas.

Each schema class gets its projection built once from its plan (`_class_encoder`, kept per
class): a field holding a str, int, bool or None is copied as it is, anything else goes
through `to_json`. Every answer the Node sends passes here, so no per-call reflection.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

import attrs

from ._shapes import Nullable, class_plan

_SCALARS: Final = frozenset({str, int, bool, type(None)})
_ENCODERS: dict[type, Callable[[Any], dict[str, Any]]] = {}


def to_json(value: Any) -> Any:
    """A JSON-safe value of a schema instance (or of a list, map or scalar of them).

    Raises TypeError for a value no schema describes (our bug).
    """
    if value is None or isinstance(value, str | bool | int):
        return value
    encoder = _ENCODERS.get(type(value))
    if encoder is not None:
        return encoder(value)
    if isinstance(value, tuple | list):
        return [item if type(item) in _SCALARS else to_json(item) for item in value]
    if isinstance(value, dict):
        return {
            str(key): item if type(item) in _SCALARS else to_json(item)
            for key, item in value.items()
        }
    if attrs.has(type(value)):
        encoder = _ENCODERS[type(value)] = _class_encoder(type(value))
        return encoder(value)
    if isinstance(value, float):
        return value
    raise TypeError(f"{type(value).__name__} is not a schema value")


def _class_encoder(cls: type) -> Callable[[Any], dict[str, Any]]:
    """The projection of one schema class: (attribute, wire name, optional, nullable,
    omitted when empty) per field, in declaration order."""
    fields = tuple(
        (
            plan.name,
            plan.wire,
            not plan.required,
            isinstance(plan.shape, Nullable),
            (plan.spec.min_items or 0) > 0,
        )
        for plan in class_plan(cls)
    )
    scalars = _SCALARS
    encoders = _ENCODERS

    def encode(value: Any) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name, wire, optional, nullable, omit_empty in fields:
            item = getattr(value, name)
            if optional:
                if item is None:
                    if not nullable:
                        continue  # absent on the wire
                elif omit_empty and not item and isinstance(item, tuple | list):
                    continue  # an empty list where the schema asks for at least one item
            kind = type(item)
            if kind in scalars:
                out[wire] = item
            elif kind in encoders:  # a nested schema object seen before
                out[wire] = encoders[kind](item)
            else:
                out[wire] = to_json(item)
        return out

    return encode
