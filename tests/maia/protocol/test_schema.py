"""The schema module: one attrs definition gives the runtime check, JSON and JSON Schema."""

# ruff: noqa: RUF009  (field() returns attrs.field: a field definition, not a shared default)

from __future__ import annotations

from typing import Any, ClassVar, Literal

import attrs
import jsonschema
import pytest
from hypothesis import given
from hypothesis import strategies as st

from maia.protocol import (
    MaiaError,
    SessionWaitInput,
    TurnWaitInput,
    check,
    field,
    spec,
    to_json,
)
from maia.protocol._jsonschema import SchemaBuilder, document


@attrs.frozen
class Inner:
    """A nested object."""

    name: str = field(doc="A name.", min_length=1, max_length=8)


@attrs.frozen
class Cat:
    """One union member."""

    kind: Literal["cat"] = field()
    lives: int = field(minimum=0, maximum=9)


@attrs.frozen
class Dog:
    """Another union member."""

    kind: Literal["dog"] = field()
    good: bool = field()


def _no_twins(value: Sample) -> tuple[str, str] | None:
    return ("b", "a and b must differ") if value.a == value.b else None


@attrs.frozen
class Sample:
    """Every kind of field."""

    __maia_refine__: ClassVar[Any] = staticmethod(_no_twins)

    session_id: str = field(pattern=r"^[a-z]+$", max_length=10)
    count: int = field(minimum=1, maximum=5)
    preview: str = field(max_length=6, length_unit="utf8-bytes")
    title: str = field(min_length=1, max_length=4, trim=True, message="needs a short title")
    mode: Literal["fast", "slow"] = field()
    tags: tuple[str, ...] = field(min_items=1, max_items=2, items=spec(min_length=2))
    meta: dict[str, int] = field(max_items=2, items=spec(minimum=0))
    inner: Inner = field()
    pet: Cat | Dog = field()
    note: str | None = field()  # required, may be null
    a: int = field(default=0)
    b: int = field(default=1)
    extra: object = field(default=None, opaque="anything")
    later: str | None = field(default=None)  # optional: absent or a string, not null


GOOD: dict[str, Any] = {
    "sessionId": "abc",
    "count": 3,
    "preview": "héllo",
    "title": "  ok ",
    "mode": "fast",
    "tags": ["xy"],
    "meta": {"k": 1},
    "inner": {"name": "n"},
    "pet": {"kind": "cat", "lives": 9},
    "note": None,
}


def _refused(value: Any) -> MaiaError:
    with pytest.raises(MaiaError) as caught:
        check(Sample, value)
    assert caught.value.code == "validation_failed"
    assert caught.value.message.startswith(caught.value.details["path"] + ": ")
    return caught.value


def test_good_value_builds_instance_and_round_trips() -> None:
    """A valid value builds the instance (trimmed, tuples) and to_json gives the wire back."""
    value = check(Sample, GOOD)
    assert value.title == "ok"
    assert value.tags == ("xy",)
    assert isinstance(value.pet, Cat)
    out = to_json(value)
    assert out["title"] == "ok"
    assert "later" not in out
    assert out["note"] is None
    assert check(Sample, out) == value


@pytest.mark.parametrize(
    ("change", "path", "message"),
    [
        ({"bogus": 1}, "bogus", "is not a known field"),
        ({"count": True}, "count", "must be an integer"),
        ({"count": 2.0}, "count", "must be an integer"),
        ({"count": 6}, "count", "must be an integer from 1 to 5"),
        ({"sessionId": "abc\n"}, "sessionId", "must match ^[a-z]+$"),
        ({"preview": "ééé!"}, "preview", "must be at most 6 UTF-8 bytes"),
        ({"title": "   "}, "title", "needs a short title"),
        ({"title": 5}, "title", "needs a short title"),
        ({"mode": "medium"}, "mode", "must be one of fast, slow"),
        ({"tags": []}, "tags", "must have 1-2 items"),
        ({"tags": ["ok", "x"]}, "tags[1]", "must be at least 2 characters"),
        ({"meta": {"k": -1}}, "meta.k", "must be an integer from 0 to 9007199254740991"),
        ({"inner": {"name": ""}}, "inner.name", "must be 1-8 characters"),
        ({"inner": {"name": "x", "more": 1}}, "inner.more", "is not a known field"),
        ({"pet": {"kind": "cow"}}, "pet.kind", "must be one of cat, dog"),
        ({"pet": {"kind": "dog", "lives": 1}}, "pet.lives", "is not a known field"),
        ({"pet": {"kind": "dog"}}, "pet.good", "is required"),
        ({"later": None}, "later", "must be a string"),
        ({"a": 1, "b": 1}, "b", "a and b must differ"),
        ({"extra": {"x": object()}}, "extra", "must be a JSON value"),
    ],
)
def test_first_failure_named_by_path(change: dict[str, Any], path: str, message: str) -> None:
    """Each bad value is refused with validation_failed naming its path and reason."""
    error = _refused({**GOOD, **change})
    assert error.details == {"path": path}
    assert error.message == f"{path}: {message}"


def test_missing_required_and_not_an_object() -> None:
    """A missing field is `is required`; a non-object root is named by the root word."""
    value = dict(GOOD)
    del value["note"]
    assert _refused(value).message == "note: is required"
    assert _refused([1]).message == "value: must be an object"


def test_union_picked_by_discriminant_only() -> None:
    """A member is chosen by `kind` alone: dog fields under kind cat are unknown fields."""
    error = _refused({**GOOD, "pet": {"kind": "cat", "good": True}})
    assert error.details["path"] == "pet.good"


def test_json_schema_is_valid_and_agrees_on_the_good_value() -> None:
    """The class's JSON Schema is a valid 2020-12 schema and accepts the good value."""
    builder = SchemaBuilder()
    schema = document(builder.object_schema(Sample), builder, "urn:test:sample")
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.Draft202012Validator(schema).validate(GOOD)
    assert schema["$defs"]["Inner"]["additionalProperties"] is False
    assert schema["properties"]["preview"]["x-maia-maxUtf8Bytes"] == 6
    assert schema["properties"]["count"]["maximum"] == 5


@given(st.integers(min_value=-(2**60), max_value=2**60) | st.booleans() | st.floats())
def test_integers_only_in_range(value: object) -> None:
    """count takes only non-bool integers 1-5: anything else raises validation_failed."""
    if type(value) is int and 1 <= value <= 5:
        assert check(Sample, {**GOOD, "count": value}).count == value
    else:
        with pytest.raises(MaiaError) as caught:
            check(Sample, {**GOOD, "count": value})
        assert caught.value.details == {"path": "count"}


def test_empty_default_list_with_min_items_is_written_as_absent() -> None:
    """An input built without `states` encodes without it, so the Node accepts it."""
    turn_wait = TurnWaitInput(turn_id="turn_1")
    wire = to_json(turn_wait)
    assert "states" not in wire
    assert check(TurnWaitInput, wire) == turn_wait
    session_wait = SessionWaitInput(session_id="session_1", activities=("idle",))
    wire = to_json(session_wait)
    assert "states" not in wire
    assert wire["activities"] == ["idle"]
    assert check(SessionWaitInput, wire) == session_wait
