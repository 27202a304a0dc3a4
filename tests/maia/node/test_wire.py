"""The envelope parser: typed errors only, whatever the bytes; valid envelopes round trip."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from maia.core import MaiaError
from maia.node._wire import MAX_DEPTH, MAX_FRAME_BYTES, parse_request

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=12,
)


@settings(max_examples=200)
@given(st.one_of(st.text(max_size=200), st.binary(max_size=200), JSON.map(json.dumps)))
def test_any_frame_gives_a_request_or_a_typed_error(frame: str | bytes) -> None:
    """Arbitrary text, bytes or JSON never raise anything but MaiaError."""
    codes: set[str] = set()
    try:
        parse_request(frame)
    except MaiaError as error:
        codes.add(error.code)
    assert codes <= {"invalid_request", "validation_failed", "frame_too_large"}


@settings(max_examples=100)
@given(
    st.one_of(st.integers(0, 2**53 - 1), st.text(min_size=1, max_size=128)),
    st.sampled_from(["node.status", "session.create", "turn.queue.list"]),
    st.dictionaries(st.text(max_size=10), JSON, max_size=4),
)
def test_valid_envelopes_round_trip(request_id: int | str, method: str, params: dict) -> None:  # type: ignore[type-arg]
    """A well-formed envelope parses back to its id, method and params."""
    parsed = parse_request(json.dumps({"id": request_id, "method": method, "params": params}))
    assert (parsed.id, parsed.method, parsed.params) == (request_id, method, params)


@pytest.mark.parametrize(
    ("frame", "detail"),
    [
        ('{"id": 1, "id": 2, "method": "a.b"}', "duplicate key"),
        ('{"id": 1, "method": "a.b", "params": {"x": Infinity}}', "not JSON"),
        ("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1), "deeper"),
        ('{"id": true, "method": "a.b"}', "id must be"),
        ('{"id": -1, "method": "a.b"}', "id must be"),
        ('{"id": 1, "method": ""}', "method must be"),
        (b"\xff\xfe", "not UTF-8"),
    ],
)
def test_refusals_name_the_problem(frame: str | bytes, detail: str) -> None:
    """Each malformed envelope is invalid_request with a message saying what is wrong."""
    with pytest.raises(MaiaError) as caught:
        parse_request(frame)
    assert caught.value.code == "invalid_request"
    assert detail in caught.value.message


def test_deep_nesting_inside_strings_is_not_counted() -> None:
    """Brackets inside strings are text, not nesting."""
    text = "[" * (MAX_DEPTH * 2)
    assert parse_request(json.dumps({"id": 1, "method": "a.b", "params": {"t": text}})).params == {
        "t": text
    }


def test_oversize_frame_is_refused_before_parsing() -> None:
    """A frame over the limit is frame_too_large, whatever it holds."""
    with pytest.raises(MaiaError) as caught:
        parse_request("x" * (MAX_FRAME_BYTES + 1))
    assert caught.value.code == "frame_too_large"
