"""`supervision._worker_json.decode_frame` against the strict parse over JSON *texts* in
every spelling a worker (or an attacker holding its pipe) could write, not only the values
orjson writes: whitespace, escapes of any code point (lone surrogates and pairs included),
numbers in every form (signs, -0, fractions, exponents, past 64 bits, past the stdlib's
digit limit), NaN/Infinity, duplicate keys, nesting around orjson's limits, invalid UTF-8.
The Node must accept exactly what the strict parse accepts, with the same value and types."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from supervision._worker_json import decode_frame
from worker_bridge import RemoteProtocolError, parse_untrusted

WS = st.sampled_from(["", "", "", " ", "\t", "\n", "\r", " \r\n"])
DIGITS = st.text("0123456789", min_size=1, max_size=25)
NUMBERS = st.one_of(
    st.integers(-(2**65), 2**65).map(str),
    st.sampled_from(["-0", "0", "-0.0", "1e400", "-1e400", "5e-324", "1E5", "1e+5", "01",
                     "9223372036854775807", "9223372036854775808", "18446744073709551615",
                     "18446744073709551616", "-9223372036854775808", "-9223372036854775809",
                     "1" * 4301, "0.1", "1.0", "1.", ".5", "+1", "0x10"]),
    st.tuples(st.sampled_from(["", "-"]), DIGITS, st.sampled_from(["", ".5", ".0", ".123456789"]),
              st.sampled_from(["", "e5", "E-3", "e+0", "e308", "e-400"])).map("".join),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.floats(allow_nan=False, allow_infinity=False).map(json.dumps),
)  # fmt: skip
CHAR = st.one_of(
    st.characters(codec="utf-8", exclude_characters='"\\'),
    st.characters(max_codepoint=0x1F),  # raw controls: the strict parse refuses them
    st.characters(categories=["Cs"]),  # a raw surrogate: bytes that are not UTF-8
    st.integers(0, 0xFFFF).map(lambda point: f"\\u{point:04x}"),
    st.integers(0, 0xFFFF).map(lambda point: f"\\u{point:04X}"),
    st.sampled_from(['\\"', "\\\\", "\\/", "\\b", "\\f", "\\n", "\\r", "\\t", "\\x"]),
    st.just("\\ud83d\\ude00"),
)  # fmt: skip
STRINGS = st.lists(CHAR, max_size=6).map(lambda parts: '"' + "".join(parts) + '"')
SCALARS = st.one_of(
    NUMBERS, STRINGS, st.sampled_from(["true", "false", "null", "NaN", "Infinity", "-Infinity"])
)


def _array(items: list[str], ws: str) -> str:
    return "[" + ws + ("," + ws).join(items) + ws + "]"


def _object(pairs: list[tuple[str, str]], ws: str) -> str:
    return "{" + ws + ("," + ws).join(f"{key}{ws}:{ws}{value}" for key, value in pairs) + ws + "}"


KEYS = STRINGS | st.sampled_from(['"a"', '"a"', '"b"'])  # repeated keys: duplicates
TEXTS = st.recursive(
    SCALARS,
    lambda inner: (
        st.builds(_array, st.lists(inner, max_size=4), WS)
        | st.builds(_object, st.lists(st.tuples(KEYS, inner), max_size=4), WS)
    ),
    max_leaves=12,
)
DEEP = st.tuples(st.integers(1, 1100), st.sampled_from(["[", '{"a":'])).map(
    lambda spec: spec[1] * spec[0] + "1" + ("]" if spec[1] == "[" else "}") * spec[0]
)
LINES = st.one_of(
    st.tuples(WS, TEXTS, WS).map(lambda parts: "".join(parts).encode("utf-8", "surrogatepass")),
    DEEP.map(str.encode),
    st.tuples(TEXTS, st.binary(min_size=1, max_size=3)).map(
        lambda parts: parts[0].encode("utf-8", "surrogatepass") + parts[1]
    ),
)


def _typed(value: Any) -> str:
    """`value` written so that 1, 1.0, True and -0.0 differ, and key order shows."""
    return json.dumps(value, ensure_ascii=True, allow_nan=True)


def _outcome(decode: Any, line: bytes) -> str:
    try:
        return _typed(decode(line, 1 << 20))
    except RemoteProtocolError as error:
        return f"refused: {error}"
    except RecursionError:
        return "recursion"


@given(LINES)
def test_the_node_s_decoder_accepts_exactly_what_the_strict_parse_accepts(line: bytes) -> None:
    """Any JSON-like text a worker pipe could carry: decode_frame gives parse_untrusted's
    value, of the same types, or the same refusal."""
    strict = _outcome(lambda data, limit: parse_untrusted(data, max_bytes=limit), line)
    assert _outcome(decode_frame, line) == strict
