"""The schema check's two additions for domain shapes: derived attributes stay off the wire,
and a constructor's `CrossFieldError` is reported at the field it names, nested or not."""

from __future__ import annotations

import attrs
import jsonschema
import pytest

from maia.core import CrossFieldError, MaiaError, check, field, to_json
from maia.protocol._jsonschema import SchemaBuilder, document


@attrs.frozen
class Span:
    """A range whose length is derived and whose ends are ordered."""

    start: int = field(minimum=0)
    end: int = field(minimum=0)
    length: int = attrs.field(init=False)

    @length.default
    def _length(self) -> int:
        return self.end - self.start

    def __attrs_post_init__(self) -> None:
        if self.length < 0:
            raise CrossFieldError("end", "must not precede start")


@attrs.frozen
class Spans:
    """Holds spans."""

    spans: tuple[Span, ...] = field()


def test_derived_attribute_is_neither_read_nor_written() -> None:
    """An init=False attribute is computed, not required on the wire, and not written."""
    span = check(Span, {"start": 2, "end": 5})
    assert span.length == 3
    assert to_json(span) == {"start": 2, "end": 5}
    with pytest.raises(MaiaError, match="length: is not a known field"):
        check(Span, {"start": 2, "end": 5, "length": 3})


def test_derived_attribute_is_not_in_the_json_schema() -> None:
    """The JSON Schema lists only the wire fields, and stays a valid 2020-12 document."""
    builder = SchemaBuilder()
    schema = document(builder.object_schema(Span), builder, "urn:test:span")
    jsonschema.Draft202012Validator.check_schema(schema)
    assert sorted(schema["properties"]) == ["end", "start"]
    assert schema["required"] == ["start", "end"]


def test_cross_field_error_is_validation_failed_at_the_nested_field() -> None:
    """A constructor's CrossFieldError becomes validation_failed naming the nested path."""
    with pytest.raises(MaiaError) as caught:
        check(Spans, {"spans": [{"start": 0, "end": 1}, {"start": 4, "end": 3}]})
    assert caught.value.code == "validation_failed"
    assert caught.value.details == {"path": "spans[1].end"}
    assert caught.value.message == "spans[1].end: must not precede start"


def test_structural_check_runs_before_the_cross_field_rule() -> None:
    """A mistyped field is reported as such, never as a broken rule."""
    with pytest.raises(MaiaError, match=r"^start: must be an integer$"):
        check(Span, {"start": "4", "end": 3})


def test_direct_construction_sees_a_value_error() -> None:
    """Built in Python, a broken rule is a ValueError naming the field (our bug)."""
    with pytest.raises(ValueError, match=r"^end: must not precede start$"):
        Span(4, 3)
