"""The shape tree: attrs classes and their annotations compiled once into plain nodes.

`shape_of(annotation, spec)` turns a Python type plus its `FieldSpec` into a node; the
runtime check (`_check.py`), the JSON Schema (`_jsonschema.py`) and the doc rows walk these
nodes, never the annotations, so the three cannot read a type differently.

Supported: `str`, `int`, `bool`, `Literal[...]` of strings, `X | None`, `tuple[X, ...]`,
`dict[str, X]`, attrs classes, unions of attrs classes told apart by one discriminant field
(a single-value `Literal` common to every member), and `object` (opaque JSON).
Anything else is our bug and raises TypeError when the class is first used. Attributes with
`init=False` are derived in Python and never on the wire.
"""

from __future__ import annotations

import functools
import types
import typing
from typing import Any, Union

import attrs

from ._fields import EMPTY_SPEC, METADATA_KEY, FieldSpec, wire_name


@attrs.frozen
class Str:
    spec: FieldSpec


@attrs.frozen
class Int:
    spec: FieldSpec


@attrs.frozen
class Bool:
    spec: FieldSpec


@attrs.frozen
class Enum:
    values: tuple[str, ...]
    spec: FieldSpec


@attrs.frozen
class ListOf:
    item: Shape
    spec: FieldSpec


@attrs.frozen
class MapOf:
    key: Str
    value: Shape
    spec: FieldSpec


@attrs.frozen
class Obj:
    cls: type
    spec: FieldSpec


@attrs.frozen
class Tagged:
    """A union of attrs classes, picked by the value of `discriminant` alone."""

    discriminant: str  # wire name
    members: tuple[tuple[str, type], ...]  # (discriminant value, class)
    spec: FieldSpec


@attrs.frozen
class Opaque:
    spec: FieldSpec


@attrs.frozen
class Nullable:
    inner: Shape
    spec: FieldSpec


Shape = Str | Int | Bool | Enum | ListOf | MapOf | Obj | Tagged | Opaque | Nullable


@attrs.frozen
class FieldPlan:
    """One attribute of a schema class as the wire sees it."""

    name: str
    wire: str
    shape: Shape
    required: bool
    default: Any
    spec: FieldSpec


def _union_args(annotation: Any) -> tuple[Any, ...] | None:
    origin = typing.get_origin(annotation)
    if origin is Union or origin is types.UnionType:
        return typing.get_args(annotation)
    return None


def _literal_value(annotation: Any) -> str | None:
    if typing.get_origin(annotation) is typing.Literal:
        args = typing.get_args(annotation)
        if len(args) == 1 and isinstance(args[0], str):
            return args[0]
    return None


def _tagged(classes: tuple[type, ...], spec: FieldSpec) -> Tagged:
    plans = [class_plan(cls) for cls in classes]
    candidates = [p.wire for p in plans[0] if _literal_value(_hint(classes[0], p.name))]
    for wire in candidates:
        members = []
        for cls, plan in zip(classes, plans, strict=True):
            found = [p for p in plan if p.wire == wire]
            value = _literal_value(_hint(cls, found[0].name)) if found else None
            if value is None:
                break
            members.append((value, cls))
        else:
            if len({value for value, _ in members}) == len(members):
                return Tagged(wire, tuple(members), spec)
    raise TypeError(f"union of {classes} has no common single-value Literal discriminant")


def shape_of(annotation: Any, spec: FieldSpec = EMPTY_SPEC) -> Shape:
    """Compile a type annotation and its constraints. Raises TypeError for unsupported types."""
    args = _union_args(annotation)
    if args is not None:
        rest = tuple(a for a in args if a is not type(None))
        inner_ann: Any = rest[0] if len(rest) == 1 else Union[rest]  # noqa: UP007
        if len(rest) < len(args):
            return Nullable(shape_of(inner_ann, spec), spec)
        if all(attrs.has(a) for a in rest):
            return _tagged(rest, spec)
        raise TypeError(f"unsupported union {annotation!r}")
    origin = typing.get_origin(annotation)
    if annotation is str:
        return Str(spec)
    if annotation is bool:
        return Bool(spec)
    if annotation is int:
        return Int(spec)
    if annotation is object or annotation is Any:
        return Opaque(spec)
    if origin is typing.Literal:
        values = typing.get_args(annotation)
        if not all(isinstance(v, str) for v in values):
            raise TypeError(f"only string literals are supported: {annotation!r}")
        return Enum(tuple(values), spec)
    if origin is tuple:
        item_args = typing.get_args(annotation)
        if len(item_args) != 2 or item_args[1] is not Ellipsis:
            raise TypeError(f"use tuple[X, ...] for lists: {annotation!r}")
        return ListOf(shape_of(item_args[0], spec.items or EMPTY_SPEC), spec)
    if origin is dict:
        key_ann, value_ann = typing.get_args(annotation)
        if key_ann is not str:
            raise TypeError(f"map keys must be str: {annotation!r}")
        return MapOf(
            Str(spec.keys or EMPTY_SPEC), shape_of(value_ann, spec.items or EMPTY_SPEC), spec
        )
    if isinstance(annotation, type) and attrs.has(annotation):
        return Obj(annotation, spec)
    raise TypeError(f"unsupported annotation {annotation!r}")


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _hint(cls: type, name: str) -> Any:
    return _hints(cls)[name]


@functools.cache
def class_plan(cls: type) -> tuple[FieldPlan, ...]:
    """The wire plan of an attrs schema class (cached). Raises TypeError on our bugs."""
    if not attrs.has(cls):
        raise TypeError(f"{cls!r} is not an attrs class")
    plans = []
    for attribute in attrs.fields(cls):
        if not attribute.init:
            continue  # derived from the other fields (e.g. a grant's duration): not on the wire
        spec = attribute.metadata.get(METADATA_KEY, EMPTY_SPEC)
        required = attribute.default is attrs.NOTHING
        default = attribute.default
        if isinstance(default, attrs.Factory):  # type: ignore[arg-type]
            required = False
        shape = shape_of(_hint(cls, attribute.name), spec)
        if isinstance(shape, Nullable) and not required and not spec.nullable:
            shape = shape.inner  # optional: absent means None, an explicit null is refused
        plans.append(
            FieldPlan(
                attribute.name,
                spec.wire or wire_name(attribute.name),
                shape,
                required,
                default,
                spec,
            )
        )
    wires = [p.wire for p in plans]
    if len(set(wires)) != len(wires):
        raise TypeError(f"{cls.__name__} has duplicate wire names")
    return tuple(plans)
