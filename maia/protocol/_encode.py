"""The JSON projection of schema instances: attrs objects to plain JSON-safe values.

Optional fields holding None are omitted (they were absent on the wire); nullable ones are
written as `null`. Tuples become lists. Nothing here checks limits: outputs are built by our
own code, and the tests check them against their schemas.
"""

from __future__ import annotations

from typing import Any

import attrs

from ._shapes import Nullable, class_plan


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
            if item is None and not plan.required and not isinstance(plan.shape, Nullable):
                continue
            out[plan.wire] = to_json(item)
        return out
    if isinstance(value, float):
        return value
    raise TypeError(f"{type(value).__name__} is not a schema value")
