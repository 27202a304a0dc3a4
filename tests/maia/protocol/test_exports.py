"""`maia.protocol` re-exports its public names once, including every op's schema classes."""

from __future__ import annotations

import ast
from pathlib import Path

import attrs

import maia.protocol
from maia.core._shapes import ListOf, MapOf, Nullable, Obj, Shape, Tagged, class_plan
from maia.protocol import REGISTRY

from ..._exports import assert_once_and_resolving

INIT = Path(maia.protocol.__file__)


def _exported() -> list[str]:
    """Every `from ... import` of the package, at top level or (the op modules' classes, which
    load lazily) under `if TYPE_CHECKING:`."""
    tree = ast.parse(INIT.read_text("utf-8"))
    return [
        alias.asname or alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    ]


def _classes(shape: Shape) -> list[type]:
    match shape:
        case Obj(cls=cls):
            return [cls]
        case Tagged(members=members):
            return [cls for _, cls in members]
        case ListOf(item=inner) | MapOf(value=inner) | Nullable(inner=inner):
            return _classes(inner)
        case _:
            return []


def test_each_public_name_once() -> None:
    """No name is re-exported twice, and each resolves on the package (lazy ones too)."""
    assert_once_and_resolving("maia.protocol", _exported())


def test_every_schema_class_is_public() -> None:
    """Each class reachable from an op's input or output is a public name of the package."""
    names = set(_exported())
    todo = [cls for op in REGISTRY for cls in (op.input_type, op.output_type) if cls is not None]
    seen: set[type] = set()
    while todo:
        cls = todo.pop()
        if cls in seen:
            continue
        seen.add(cls)
        assert attrs.has(cls)
        assert cls.__name__ in names, cls
        for plan in class_plan(cls):
            todo.extend(_classes(plan.shape))
