"""The JSON projection of schema instances: attrs objects to plain JSON-safe values.

Optional fields holding None are omitted (they were absent on the wire); nullable ones are
written as `null`. An optional list left at its empty default is omitted too when the schema
asks for at least one item (`session.wait`'s `states`): absent is its only valid spelling.
Tuples become lists. Nothing here checks limits: outputs are built by our
own code, and the tests check them against their schemas.
"""

from __future__ import annotations

from typing import Any

import attrs

from ._shapes import FieldPlan, Nullable, class_plan


def to_json(value: Any) -> Any:
    """A JSON-safe value of a schema instance (or of a list, map or scalar of them).

    Raises TypeError for a value no schema describes (our bug).
    """
    if value is None or isinstance(value, str | bool | int):
        return value
    if isinstance(value, tuple | list):
        return [to_json(item) for item in value]
    if isinstance(value, dict):
        return {str(key): to_json(item) for key, item in value.items()}
    if attrs.has(type(value)):
        out: dict[str, Any] = {}
        for plan in class_plan(type(value)):  # type: ignore[arg-type]
            item = getattr(value, plan.name)
            if not plan.required and _absent(item, plan):
                continue
            out[plan.wire] = to_json(item)
        return out
    if isinstance(value, float):
        return value
    raise TypeError(f"{type(value).__name__} is not a schema value")


def _absent(item: Any, plan: FieldPlan) -> bool:
    """Whether an optional field's value is written by leaving the field out."""
    if item is None:
        return not isinstance(plan.shape, Nullable)
    min_items = plan.spec.min_items or 0
    return isinstance(item, tuple | list) and not item and min_items > 0
