"""s7-pipe's orjson request parse (66c8ae9): over texts built to sit at the edge between
orjson and the standard library's strict parse (64-bit and wider integers, -0 and -0.0,
subnormal and largest floats, exponents, U+2028, DEL, a BOM, raw and escaped non-BMP
characters, lone surrogates, duplicate keys, NaN and Infinity, whitespace, nesting around
the depth bound, bytes frames), `parse_request` accepts exactly what the strict parse alone
accepts, with values of the same types, and refuses the rest with the same code, message
and details."""

from __future__ import annotations

from typing import Any
from unittest import mock

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from maia.core import MaiaError
from maia.node import _wire
from maia.node._wire import MAX_DEPTH, parse_request

EDGE_INTS = st.sampled_from(
    [0, 1, 2**31, 2**53 - 1, 2**53, 2**63 - 1, 2**63, 2**64 - 1, -(2**63), -(2**63) - 1]
)
EDGE_FLOATS = st.sampled_from(
    [0.0, -0.0, 5e-324, 2.2250738585072014e-308, 1.7976931348623157e308, 1e16, 1e-7, 0.1,
     123456789012345680.0, 1.5, -1e300]
)  # fmt: skip
EDGE_CHARS = st.sampled_from(
    ["\u2028", "\u2029", "\x7f", "\ufeff", "\U0001f600", "é", "\x00", "\x1f", '"', "\\", "/"]
)
STRINGS = st.lists(EDGE_CHARS | st.characters(), max_size=6).map("".join)
SCALARS = (
    st.none() | st.booleans() | EDGE_INTS | st.integers() | EDGE_FLOATS
    | st.floats(allow_nan=False, allow_infinity=False) | STRINGS
)  # fmt: skip
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(STRINGS, inner, max_size=3),
    max_leaves=8,
)
IDS = st.integers(0, 2**53) | st.text(min_size=1, max_size=4) | EDGE_INTS | st.booleans()


def _compact(value: Any) -> str | None:
    try:
        return orjson.dumps(value).decode()
    except (TypeError, orjson.JSONEncodeError):
        return None


def _spelled(text: str | None, spelling: int) -> str:
    """`text` (a compact JSON text) spelled another way a client might."""
    text = text or "{}"
    if spelling == 1:
        return "\ufeff" + text
    if spelling == 2:
        return text + "\n"
    if spelling == 3:
        return text.replace(":", ": ", 1)
    if spelling == 4:  # a duplicate key that repeats the last one
        return text[:-1] + ',"id":1}' if text.endswith("}") and len(text) > 2 else text
    if spelling == 5:
        return text.replace("0.0", "-0", 1).replace("1.5", "NaN", 1).replace("1e16", "Infinity", 1)
    if spelling == 6:
        return text.replace("\U0001f600", "\\ud83d\\ude00").replace("é", "\\ud800")
    return text


def _nested(depth: int) -> str:
    return '{"id":1,"method":"x.y","params":{"a":' + "[" * depth + "]" * depth + "}}"


ENVELOPES = st.builds(
    lambda request_id, method, params: _compact(
        {"id": request_id, "method": method, "params": params}
    ),
    IDS,
    st.sampled_from(["turn.send", "node.status", "x", "bad method", ""]),
    st.dictionaries(STRINGS, VALUES, max_size=4) | VALUES,
)
TEXTS = st.one_of(
    st.builds(_spelled, ENVELOPES, st.integers(0, 6)),
    st.builds(_compact, VALUES).map(lambda text: text or "null"),
    st.builds(_nested, st.integers(MAX_DEPTH - 3, MAX_DEPTH + 1)),
    st.text(max_size=40),
)
FRAMES = TEXTS | TEXTS.map(lambda text: text.encode("utf-8", "surrogatepass"))


def _tagged(value: Any) -> Any:
    """`value` with every scalar's type beside it (True is not 1, -0.0 is not 0.0)."""
    if isinstance(value, dict):
        return ("dict", [(key, _tagged(item)) for key, item in value.items()])
    if isinstance(value, list):
        return ("list", [_tagged(item) for item in value])
    return (type(value).__name__, repr(value))


def _outcome(frame: str | bytes) -> Any:
    try:
        request = parse_request(frame)
    except MaiaError as error:
        return ("refused", error.code, error.message, repr(error.details))
    return ("accepted", _tagged(request.id), request.method, _tagged(request.params))


def _strict_outcome(frame: str | bytes) -> Any:
    with mock.patch.object(_wire, "_as_orjson_writes_it", return_value=_wire._NOT_PLAIN):
        return _outcome(frame)


@settings(max_examples=1500)
@given(FRAMES)
def test_parse_request_answers_as_the_strict_parse_alone(frame: str | bytes) -> None:
    """Any frame: the same Request (same types) or the same typed refusal."""
    assert _outcome(frame) == _strict_outcome(frame)


@given(ENVELOPES.filter(lambda text: text is not None))
def test_the_compact_form_of_edge_values_takes_the_fast_path_only_when_equal(text: str) -> None:
    """Where orjson's path is taken (it writes the text back byte for byte), its value is
    the strict parse's value, types included."""
    value = _wire._as_orjson_writes_it(text)
    if value is not _wire._NOT_PLAIN:
        assert _tagged(value) == _tagged(_wire._DECODER.decode(text))
