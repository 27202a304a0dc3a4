"""The runtime check and the JSON projection of schema classes.

`check(cls, value)` turns an untrusted JSON value into an instance of `cls`, or raises
`MaiaError("validation_failed", "<path>: <message>", {"path": <path>})` for the first failure
(unknown keys first, then fields in declaration order, then the class's cross-field rules).
`to_json(instance)` is the inverse. Checks are compiled once per class into closures, so the
API entry pays no reflection.

A cross-field rule is written either as `__maia_refine__` (checked on the wire only) or, for a
class our own code also builds, in the constructor raising `CrossFieldError`: direct
construction then sees a ValueError (our bug), and `check` reports it at the field it names.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, Final, TypeVar

from ._errors import MaiaError
from ._fields import FieldSpec
from ._shapes import (
    Bool,
    Enum,
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
from ._time import MAX_SAFE_INTEGER

Decoder = Callable[[Any, str], Any]
T = TypeVar("T")
OPAQUE_MAX_DEPTH: Final = 32


class CrossFieldError(ValueError):
    """A schema class's constructor refusing a combination of fields no metadata can say.

    `field` is the wire name the failure is charged to (relative to the object).
    """

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"{field}: {problem}")
        self.field = field
        self.problem = problem


class _Failure(Exception):
    """Internal: the first failure, carried up to `check` which turns it into a MaiaError."""

    def __init__(self, path: str, message: str) -> None:
        self.path = path
        self.message = message


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _fail(path: str, spec: FieldSpec, default: str) -> _Failure:
    return _Failure(path, spec.message or default)


def runtime_pattern(pattern: str) -> re.Pattern[str]:
    """Python regex with ECMA-262 `$` (end of text only, never before a final newline)."""
    if pattern.endswith("$") and not pattern.endswith("\\$"):
        pattern = pattern[:-1] + r"\Z"
    return re.compile(pattern.replace("$|", r"\Z|"))


def length_phrase(spec: FieldSpec) -> str:
    unit = "UTF-8 bytes" if spec.length_unit == "utf8-bytes" else "characters"
    low, high = spec.min_length, spec.max_length
    if low is not None and high is not None:
        return f"must be {low}-{high} {unit}"
    if high is not None:
        return f"must be at most {high} {unit}"
    return "must not be empty" if low == 1 else f"must be at least {low} {unit}"


def range_phrase(spec: FieldSpec) -> str:
    low = spec.minimum if spec.minimum is not None else -MAX_SAFE_INTEGER
    high = spec.maximum if spec.maximum is not None else MAX_SAFE_INTEGER
    return f"must be an integer from {low} to {high}"


def _str_decoder(shape: Str) -> Decoder:
    spec = shape.spec
    pattern = runtime_pattern(spec.pattern) if spec.pattern else None
    low, high = spec.min_length, spec.max_length
    utf8 = spec.length_unit == "utf8-bytes"
    pattern_text = spec.pattern_doc or f"must match {spec.pattern}"

    def decode(value: Any, path: str) -> Any:
        if not isinstance(value, str):
            raise _fail(path, spec, "must be a string")
        if spec.trim:
            value = value.strip()
        if low is not None or high is not None:
            size = len(value.encode("utf-8", "surrogatepass")) if utf8 else len(value)
            if (low is not None and size < low) or (high is not None and size > high):
                raise _fail(path, spec, length_phrase(spec))
        if pattern is not None and pattern.search(value) is None:
            raise _fail(path, spec, pattern_text)
        return value

    return decode


def _int_decoder(shape: Int) -> Decoder:
    spec = shape.spec
    low = spec.minimum if spec.minimum is not None else -MAX_SAFE_INTEGER
    high = spec.maximum if spec.maximum is not None else MAX_SAFE_INTEGER

    def decode(value: Any, path: str) -> Any:
        # bool is an int in Python; JSON's true is not a number.
        if type(value) is not int:
            raise _fail(path, spec, "must be an integer")
        if not low <= value <= high:
            raise _fail(path, spec, range_phrase(spec))
        return value

    return decode


def _bool_decoder(shape: Bool) -> Decoder:
    def decode(value: Any, path: str) -> Any:
        if type(value) is not bool:
            raise _fail(path, shape.spec, "must be a boolean")
        return value

    return decode


def _enum_decoder(shape: Enum) -> Decoder:
    allowed = frozenset(shape.values)
    message = "must be one of " + ", ".join(shape.values)

    def decode(value: Any, path: str) -> Any:
        if not isinstance(value, str) or value not in allowed:
            raise _fail(path, shape.spec, message)
        return value

    return decode


def items_phrase(spec: FieldSpec, noun: str = "items") -> str:
    low, high = spec.min_items, spec.max_items
    if low is not None and high is not None:
        return f"must have {low}-{high} {noun}"
    if high is not None:
        return f"must have at most {high} {noun}"
    return f"must have at least {low} {noun}"


def _list_decoder(shape: ListOf) -> Decoder:
    spec = shape.spec
    item = decoder_of(shape.item)
    low, high = spec.min_items or 0, spec.max_items

    def decode(value: Any, path: str) -> Any:
        if not isinstance(value, list):
            raise _fail(path, spec, "must be a list")
        if len(value) < low or (high is not None and len(value) > high):
            raise _fail(path, spec, items_phrase(spec))
        return tuple(item(entry, f"{path}[{index}]") for index, entry in enumerate(value))

    return decode


def _map_decoder(shape: MapOf) -> Decoder:
    spec = shape.spec
    key = decoder_of(shape.key)
    item = decoder_of(shape.value)
    low, high = spec.min_items or 0, spec.max_items

    def decode(value: Any, path: str) -> Any:
        if not isinstance(value, dict):
            raise _fail(path, spec, "must be an object")
        if len(value) < low or (high is not None and len(value) > high):
            raise _fail(path, spec, items_phrase(spec, "entries"))
        out = {}
        for name, entry in value.items():
            child = _join(path, name)
            out[key(name, child)] = item(entry, child)
        return out

    return decode


def _opaque_decoder(shape: Opaque) -> Decoder:
    def decode(value: Any, path: str) -> Any:
        stack = [(value, 0)]
        while stack:
            item, depth = stack.pop()
            if depth > OPAQUE_MAX_DEPTH:
                raise _fail(path, shape.spec, f"nests deeper than {OPAQUE_MAX_DEPTH}")
            if isinstance(item, dict):
                if not all(isinstance(k, str) for k in item):
                    raise _fail(path, shape.spec, "must be a JSON value")
                stack.extend((v, depth + 1) for v in item.values())
            elif isinstance(item, list):
                stack.extend((v, depth + 1) for v in item)
            elif not (item is None or isinstance(item, str | int | float)):
                raise _fail(path, shape.spec, "must be a JSON value")
        return value

    return decode


def _nullable_decoder(shape: Nullable) -> Decoder:
    inner = decoder_of(shape.inner)

    def decode(value: Any, path: str) -> Any:
        return None if value is None else inner(value, path)

    return decode


def _tagged_decoder(shape: Tagged) -> Decoder:
    members = {value: class_decoder(cls) for value, cls in shape.members}
    tag = shape.discriminant
    message = f"must be one of {', '.join(members)}"

    def decode(value: Any, path: str) -> Any:
        if not isinstance(value, dict):
            raise _fail(path, shape.spec, "must be an object")
        chosen = value.get(tag)
        member = members.get(chosen) if isinstance(chosen, str) else None
        if member is None:
            raise _Failure(_join(path, tag), message)
        return member(value, path)

    return decode


_CLASS_DECODERS: dict[type, Decoder] = {}


def class_decoder(cls: type) -> Decoder:
    """The compiled check of an attrs schema class (built on first use)."""
    found = _CLASS_DECODERS.get(cls)
    if found is not None:
        return found
    box: list[Decoder] = []

    def deferred(value: Any, path: str) -> Any:  # lets recursive classes compile
        return box[0](value, path)

    _CLASS_DECODERS[cls] = deferred
    plans = class_plan(cls)
    fields = [(p.name, p.wire, decoder_of(p.shape), p.required) for p in plans]
    known = frozenset(p.wire for p in plans)
    # A cross-field rule (e.g. "states or activities"): returns (wire path, message) or None.
    refine = getattr(cls, "__maia_refine__", None)

    def decode(value: Any, path: str) -> Any:
        if not isinstance(value, dict):
            raise _Failure(path, "must be an object")
        if not known.issuperset(value):
            extra = sorted(k for k in value if k not in known)[0]
            raise _Failure(_join(path, str(extra)), "is not a known field")
        kwargs = {}
        for name, wire, field_decoder, required in fields:
            if wire in value:
                kwargs[name] = field_decoder(value[wire], _join(path, wire))
            elif required:
                raise _Failure(_join(path, wire), "is required")
        try:
            instance = cls(**kwargs)
        except CrossFieldError as error:
            raise _Failure(_join(path, error.field), error.problem) from None
        if refine is not None:
            problem = refine(instance)
            if problem is not None:
                raise _Failure(_join(path, problem[0]), problem[1])
        return instance

    box.append(decode)
    _CLASS_DECODERS[cls] = decode
    return decode


def decoder_of(shape: Shape) -> Decoder:
    """The compiled check of one shape node."""
    match shape:
        case Str():
            return _str_decoder(shape)
        case Int():
            return _int_decoder(shape)
        case Bool():
            return _bool_decoder(shape)
        case Enum():
            return _enum_decoder(shape)
        case ListOf():
            return _list_decoder(shape)
        case MapOf():
            return _map_decoder(shape)
        case Obj():
            return class_decoder(shape.cls)
        case Tagged():
            return _tagged_decoder(shape)
        case Opaque():
            return _opaque_decoder(shape)
        case Nullable():
            return _nullable_decoder(shape)


def check(cls: type[T], value: object, root: str = "value") -> T:
    """Check an untrusted JSON value against schema class `cls` and build the instance.

    Raises `MaiaError("validation_failed")` naming the path of the first failure; the
    root itself is named `root`.
    """
    try:
        result: T = class_decoder(cls)(value, "")
    except _Failure as failure:
        path = failure.path or root
        raise MaiaError("validation_failed", f"{path}: {failure.message}", {"path": path}) from None
    return result
