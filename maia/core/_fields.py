"""Field constraints of the schema module: what `field(...)` puts in attrs metadata.

An operation's input and output are attrs classes; each field's metadata carries a
`FieldSpec` (lengths, pattern, trim, range, item counts, the refusal message, the wire name).
The runtime check, the JSON Schema and the doc row are all read from it (see `_shapes.py`),
so a limit is written once.
"""

from __future__ import annotations

from typing import Any, Final, Literal

import attrs

METADATA_KEY: Final = "maia"
LengthUnit = Literal["characters", "utf8-bytes"]


@attrs.frozen
class FieldSpec:
    """Constraints on one value (a field, or the items/values of a list/map field)."""

    doc: str = ""
    min_length: int | None = None
    max_length: int | None = None
    length_unit: LengthUnit = "characters"
    pattern: str | None = None
    pattern_doc: str | None = None  # a human phrase for the pattern, used in messages
    trim: bool = False
    minimum: int | None = None
    maximum: int | None = None
    min_items: int | None = None
    max_items: int | None = None
    message: str | None = None
    wire: str | None = None
    nullable: bool = False
    opaque: str | None = None
    items: FieldSpec | None = None
    keys: FieldSpec | None = None
    forward_compatible: bool = False


EMPTY_SPEC: Final = FieldSpec()


def spec(**kwargs: Any) -> FieldSpec:
    """A `FieldSpec` for the items of a list or the values of a map."""
    return FieldSpec(**kwargs)


def field(
    *,
    doc: str = "",
    default: Any = attrs.NOTHING,
    factory: Any = None,
    min_length: int | None = None,
    max_length: int | None = None,
    length_unit: LengthUnit = "characters",
    pattern: str | None = None,
    pattern_doc: str | None = None,
    trim: bool = False,
    minimum: int | None = None,
    maximum: int | None = None,
    min_items: int | None = None,
    max_items: int | None = None,
    message: str | None = None,
    wire: str | None = None,
    nullable: bool = False,
    opaque: str | None = None,
    items: FieldSpec | None = None,
    keys: FieldSpec | None = None,
) -> Any:
    """An attrs field whose metadata carries its wire constraints.

    A field with a default (or factory) is optional on the wire; without one it is required.
    `nullable` lets an explicit `null` through; `wire` overrides the camelCase wire name.
    """
    metadata = {
        METADATA_KEY: FieldSpec(
            doc=doc,
            min_length=min_length,
            max_length=max_length,
            length_unit=length_unit,
            pattern=pattern,
            pattern_doc=pattern_doc,
            trim=trim,
            minimum=minimum,
            maximum=maximum,
            min_items=min_items,
            max_items=max_items,
            message=message,
            wire=wire,
            nullable=nullable,
            opaque=opaque,
            items=items,
            keys=keys,
        )
    }
    if factory is not None:
        return attrs.field(factory=factory, metadata=metadata)
    return attrs.field(default=default, metadata=metadata)


def wire_name(python_name: str) -> str:
    """camelCase wire name of a snake_case attribute (`session_id` → `sessionId`)."""
    head, *rest = python_name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)
