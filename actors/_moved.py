"""`moved(row, state, revision)`: `attrs.evolve(row, state=..., revision=...)`, generated
once per class.

Every transition the write path applies ends with the row at its new state and revision;
`attrs.evolve` re-reads the class's fields and builds a keyword dict on each call (a visible
share of a turn's commit bodies). The generated function reads each field directly and
calls the class's own `__init__`, so validators and converters still run: it is
`attrs.evolve`, not a copy that skips them (contrast `supervision.leases._evolve`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import attrs

T = TypeVar("T")
_MOVERS: dict[type, Callable[[Any, Any, int], Any]] = {}


def _mover(cls: type) -> Callable[[Any, Any, int], Any]:
    """Generate `move(row, state, revision)` for the attrs class `cls`."""
    arguments = []
    for field in attrs.fields(cls):
        if not field.init:
            continue  # attrs.evolve leaves these to __init__ too
        value = field.name if field.name in ("state", "revision") else f"row.{field.name}"
        arguments.append(f"{field.alias}={value}")
    if not {"state=state", "revision=revision"} <= set(arguments):
        raise TypeError(f"{cls.__name__} has no state and revision fields to move")
    source = f"def move(row, state, revision):\n    return _cls({', '.join(arguments)})\n"
    namespace: dict[str, Any] = {"_cls": cls}
    exec(source, namespace)  # the attrs way: straight-line code per class
    mover: Callable[[Any, Any, int], Any] = namespace["move"]
    return mover


def moved(row: T, state: Any, revision: int) -> T:
    """`row` at `state` and `revision` (its class's validators run, as with attrs.evolve)."""
    cls = type(row)
    mover = _MOVERS.get(cls)
    if mover is None:
        mover = _MOVERS[cls] = _mover(cls)
    result: T = mover(row, state, revision)
    return result
