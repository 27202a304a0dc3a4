"""canonical_json's orjson fast path gives exactly the rfc8785 package's bytes, or the same
refusal, over random JSON-like values (every key and string alphabet, integers past the
safe range, tuples, subclasses that must leave the fast path)."""

from __future__ import annotations

import enum
from typing import Any

import pytest
import rfc8785
from hypothesis import given
from hypothesis import strategies as st

from maia.core import canonical_json
from maia.core._digests import _plain

_SAFE = 2**53 - 1
_texts = st.one_of(
    st.text(max_size=8),
    st.text(st.characters(max_codepoint=0x7F), max_size=8),  # control characters included
    st.sampled_from(["\U0001f600", "\ufb33", "\u2028", "\x7f", "\ud800", "\\", '"']),
)
# Keys from an alphabet where code point and UTF-16 order disagree (U+E000 and up against
# the supplementary planes), so a wrong sort shows up in a few examples.
_keys = st.one_of(
    _texts, st.text(st.sampled_from("a\u00e9\ue000\ufb33\uffff\U0001f600\U00010000"), max_size=3)
)
_integers = st.one_of(st.integers(-_SAFE, _SAFE), st.integers(), st.sampled_from([_SAFE + 1]))
_leaves = st.one_of(st.none(), st.booleans(), _integers, _texts)
_values = st.recursive(
    _leaves,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.lists(inner, max_size=4).map(tuple),
        st.dictionaries(_keys, inner, max_size=4),
    ),
    max_leaves=24,
)


def _outcome(encode: Any, value: Any) -> tuple[str, Any]:
    try:
        return "bytes", encode(value)
    except Exception as error:  # the refusal's kind is what must match
        return "error", type(error)


@given(_values)
def test_fast_path_bytes_equal_rfc8785(value: Any) -> None:
    """For any value, canonical_json answers what rfc8785.dumps answers (bytes or error)."""
    assert _outcome(canonical_json, value) == _outcome(rfc8785.dumps, value)


class _Colour(enum.StrEnum):
    RED = "red"


def test_what_leaves_the_fast_path() -> None:
    """Non-ASCII keys, unsafe integers, str and int subclasses go to rfc8785; plain ones
    do not; a float anywhere is refused either way."""
    assert _plain({"a": [1, "é", None, True, (2, 3)]})
    assert not _plain({"é": 1})
    assert not _plain([_SAFE + 1])
    assert not _plain({"c": _Colour.RED})
    assert canonical_json({"c": _Colour.RED}) == rfc8785.dumps({"c": "red"})
    assert canonical_json({"\U0001f600": 1, "\ufb33": 2}) == rfc8785.dumps(
        {"\U0001f600": 1, "\ufb33": 2}
    )
    with pytest.raises(ValueError, match="floats"):
        canonical_json({"é": [1.5]})
    with pytest.raises(ValueError, match="floats"):
        canonical_json({"a": (1, 0.5)})
