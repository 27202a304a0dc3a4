"""JSON Schema (2020-12) and doc text of schema classes, read from the shape tree.

Representable constraints are kept; runtime-only refinements (a limit in UTF-8 bytes, trimming)
are written as `x-maia-*` keywords and in the description, never silently widened away.
Every nested class goes into `$defs` under its class name; two classes with one name in one
document are our bug and raise TypeError. Output is deterministic: same registry, same bytes.
"""

from __future__ import annotations

import inspect
from typing import Any, Final

from maia.core._check import items_phrase, length_phrase, range_phrase
from maia.core._fields import FieldSpec
from maia.core._shapes import (
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
from maia.core._time import MAX_SAFE_INTEGER

DIALECT: Final = "https://json-schema.org/draft/2020-12/schema"


def class_doc(cls: type) -> str:
    """First paragraph of a class docstring, on one line."""
    text = inspect.getdoc(cls) or ""
    return " ".join(text.split("\n\n")[0].split())


class SchemaBuilder:
    """Collects `$defs` while translating shapes; one builder per document."""

    def __init__(self) -> None:
        self.defs: dict[str, dict[str, Any]] = {}
        self._owners: dict[str, type] = {}

    def ref(self, cls: type) -> dict[str, Any]:
        name = cls.__name__
        owner = self._owners.get(name)
        if owner is not None and owner is not cls:
            raise TypeError(f"two schema classes are named {name}")
        if owner is None:
            self._owners[name] = cls
            self.defs[name] = {}  # placeholder first: recursion terminates
            self.defs[name] = self.object_schema(cls)
        return {"$ref": f"#/$defs/{name}"}

    def object_schema(self, cls: type) -> dict[str, Any]:
        properties: dict[str, Any] = {}
        required = []
        for plan in class_plan(cls):
            properties[plan.wire] = self.shape(plan.shape)
            if plan.required:
                required.append(plan.wire)
        schema: dict[str, Any] = {"type": "object", "title": cls.__name__}
        doc = class_doc(cls)
        if doc:
            schema["description"] = doc
        schema["properties"] = properties
        if required:
            schema["required"] = required
        schema["additionalProperties"] = False
        # The representable part of a cross-field rule (see `__maia_refine__`).
        schema.update(getattr(cls, "__maia_schema__", {}))
        return schema

    def shape(self, shape: Shape) -> dict[str, Any]:
        schema = self._shape(shape)
        if shape.spec.doc and "$ref" not in schema:
            schema = {"description": shape.spec.doc, **schema}
        elif shape.spec.doc:
            schema = {"description": shape.spec.doc, "allOf": [schema]}
        return schema

    def _shape(self, shape: Shape) -> dict[str, Any]:
        spec = shape.spec
        match shape:
            case Str():
                return _string(spec)
            case Int():
                return {
                    "type": "integer",
                    "minimum": spec.minimum if spec.minimum is not None else -MAX_SAFE_INTEGER,
                    "maximum": spec.maximum if spec.maximum is not None else MAX_SAFE_INTEGER,
                }
            case Bool():
                return {"type": "boolean"}
            case Enum(values=values):
                if len(values) == 1:
                    return {"type": "string", "const": values[0]}
                return {"type": "string", "enum": list(values)}
            case ListOf(item=item):
                out: dict[str, Any] = {"type": "array", "items": self.shape(item)}
                if spec.min_items is not None:
                    out["minItems"] = spec.min_items
                if spec.max_items is not None:
                    out["maxItems"] = spec.max_items
                return out
            case MapOf(key=key, value=value):
                out = {
                    "type": "object",
                    "propertyNames": _string(key.spec),
                    "additionalProperties": self.shape(value),
                }
                if spec.min_items is not None:
                    out["minProperties"] = spec.min_items
                if spec.max_items is not None:
                    out["maxProperties"] = spec.max_items
                return out
            case Obj(cls=cls):
                return self.ref(cls)
            case Tagged(members=members, discriminant=tag):
                return {
                    "oneOf": [self.ref(cls) for _, cls in members],
                    "x-maia-discriminant": tag,
                }
            case Opaque():
                return {"title": spec.opaque or "JSON value"}
            case Nullable(inner=inner):
                return {"anyOf": [self.shape(inner), {"type": "null"}]}


def _string(spec: FieldSpec) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "string"}
    if spec.trim:
        return {**out, **_trimmed(spec), "x-maia-trim": True}
    if spec.min_length is not None:
        out["minLength"] = spec.min_length
    if spec.max_length is not None:
        # A code point is at least one byte: a byte limit bounds the length loosely.
        out["maxLength"] = spec.max_length
        if spec.length_unit == "utf8-bytes":
            out["x-maia-maxUtf8Bytes"] = spec.max_length
    if spec.pattern is not None:
        out["pattern"] = spec.pattern
    return out


def _trimmed(spec: FieldSpec) -> dict[str, Any]:
    """Limits on the trimmed text, said as a pattern on the raw text (lengths cannot say it)."""
    low, high = spec.min_length or 0, spec.max_length
    if spec.pattern is not None or low > 1 or spec.length_unit != "characters":
        raise TypeError("trim is supported with a character limit, min_length <= 1, no pattern")
    if high is None:
        return {"pattern": r"\S"} if low else {}
    body = r"\S" if high == 1 else rf"(?:\S|\S[\s\S]{{0,{high - 2}}}\S)"
    if not low:
        body = f"(?:{body})?"
    return {"pattern": rf"^\s*{body}\s*$"}


def document(root: dict[str, Any], builder: SchemaBuilder, schema_id: str) -> dict[str, Any]:
    """A standalone 2020-12 document: dialect, versioned `$id`, the root, bundled `$defs`."""
    doc: dict[str, Any] = {"$schema": DIALECT, "$id": schema_id, **root}
    if builder.defs:
        doc["$defs"] = dict(sorted(builder.defs.items()))
    return doc


def type_text(shape: Shape) -> str:
    """Markdown type of a shape for the op reference."""
    match shape:
        case Str():
            return "string"
        case Int():
            return "integer"
        case Bool():
            return "boolean"
        case Enum(values=values):
            return " \\| ".join(f"`{v}`" for v in values)
        case ListOf(item=item):
            return f"list of {type_text(item)}"
        case MapOf(value=value):
            return f"map of string → {type_text(value)}"
        case Obj(cls=cls):
            return f"[{cls.__name__}](#{cls.__name__.lower()})"
        case Tagged(members=members, discriminant=tag):
            names = " \\| ".join(f"[{c.__name__}](#{c.__name__.lower()})" for _, c in members)
            return f"{names} (by `{tag}`)"
        case Opaque(spec=spec):
            return f"JSON ({spec.opaque or 'any value'})"
        case Nullable(inner=inner):
            return f"{type_text(inner)} or null"


def limits_text(shape: Shape) -> str:
    """Markdown constraints of a shape (and of its list items) for the op reference."""
    spec = shape.spec
    parts = []
    if isinstance(shape, Nullable):
        return limits_text(shape.inner)
    if spec.min_length is not None or spec.max_length is not None:
        parts.append(length_phrase(spec).removeprefix("must be "))
    if spec.trim:
        parts.append("trimmed")
    if spec.pattern is not None:
        parts.append(f"`{spec.pattern}`".replace("|", "\\|"))
    if isinstance(shape, Int) and (spec.minimum is not None or spec.maximum is not None):
        parts.append(range_phrase(spec).removeprefix("must be an integer "))
    if spec.min_items is not None or spec.max_items is not None:
        parts.append(items_phrase(spec).removeprefix("must have "))
    if isinstance(shape, ListOf | MapOf):
        inner = limits_text(shape.item if isinstance(shape, ListOf) else shape.value)
        if inner:
            parts.append(f"each: {inner}")
    return "; ".join(parts)
