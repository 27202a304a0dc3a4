"""`to_json`'s per-class projections give what the field-by-field reflection gave, for every
input and output class of the registry, whatever the fields hold."""

from __future__ import annotations

from typing import Any

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from maia.core import to_json
from maia.core._shapes import (
    Bool,
    Enum,
    FieldPlan,
    Int,
    ListOf,
    MapOf,
    Nullable,
    Obj,
    Opaque,
    Shape,
    Str,
    Tagged,
    class_plan,
)
from maia.protocol import REGISTRY

MAX_DEPTH = 3


def reference(value: Any) -> Any:
    """The projection as it was before the per-class plans: reflection at every call."""
    if value is None or isinstance(value, str | bool | int):
        return value
    if isinstance(value, tuple | list):
        return [reference(item) for item in value]
    if isinstance(value, dict):
        return {str(key): reference(item) for key, item in value.items()}
    if attrs.has(type(value)):
        out: dict[str, Any] = {}
        cls: type = type(value)
        for plan in class_plan(cls):
            item = getattr(value, plan.name)
            if not plan.required and _absent(item, plan):
                continue
            out[plan.wire] = reference(item)
        return out
    if isinstance(value, float):
        return value
    raise TypeError(f"{type(value).__name__} is not a schema value")


def _absent(item: Any, plan: FieldPlan) -> bool:
    if item is None:
        return not isinstance(plan.shape, Nullable)
    return isinstance(item, tuple | list) and not item and (plan.spec.min_items or 0) > 0


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=6,
)


def _of(shape: Shape, depth: int) -> st.SearchStrategy[Any]:
    if isinstance(shape, Str):
        return st.text(max_size=8)
    if isinstance(shape, Int):
        return st.integers(-(2**53), 2**53)
    if isinstance(shape, Bool):
        return st.booleans()
    if isinstance(shape, Enum):
        return st.sampled_from(shape.values)
    if isinstance(shape, Nullable):
        return st.none() | _of(shape.inner, depth)
    if isinstance(shape, Opaque) or depth >= MAX_DEPTH:
        return JSON
    if isinstance(shape, ListOf):
        return st.lists(_of(shape.item, depth + 1), max_size=3).map(tuple)
    if isinstance(shape, MapOf):
        return st.dictionaries(st.text(max_size=4), _of(shape.value, depth + 1), max_size=3)
    if isinstance(shape, Obj):
        return instances(shape.cls, depth + 1)
    assert isinstance(shape, Tagged)
    return st.one_of(*(instances(cls, depth + 1) for _, cls in shape.members))


def instances(cls: type, depth: int = 0) -> st.SearchStrategy[Any]:
    """Instances of `cls` with any values of their fields' shapes (optional ones None or an
    empty tuple at times), built around the constructor: projection checks no rule."""
    fields: dict[str, st.SearchStrategy[Any]] = {}
    for plan in class_plan(cls):
        value = _of(plan.shape, depth)
        fields[plan.name] = value if plan.required else st.none() | st.just(()) | value

    def build(values: dict[str, Any]) -> Any:
        made: Any = object.__new__(cls)
        for name, item in values.items():
            object.__setattr__(made, name, item)
        return made

    return st.fixed_dictionaries(fields).map(build)


CLASSES = sorted(
    {cls for op in REGISTRY for cls in (op.input_type, op.output_type) if cls is not None},
    key=lambda cls: f"{cls.__module__}.{cls.__qualname__}",
)


@pytest.mark.parametrize("cls", CLASSES, ids=lambda cls: cls.__qualname__)
@settings(max_examples=10)
@given(data=st.data())
def test_projection_matches_reflection(cls: type, data: st.DataObject) -> None:
    """Each registry class's projection equals the reference, field for field, in order."""
    value = data.draw(instances(cls))
    got, want = to_json(value), reference(value)
    assert got == want
    assert list(got) == list(want)


def test_a_value_no_schema_describes_is_refused() -> None:
    """Outside the schemas the projection still raises TypeError (our bug), as before."""
    for bad in (object(), {1.5j}, (b"bytes",)):
        try:
            to_json(bad)
        except TypeError:
            continue
        raise AssertionError(f"{bad!r} was projected")
