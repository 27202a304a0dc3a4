"""`supervision._worker_json.encode_frame`: the Node's frame encoder writes what the stdlib one
writes, and raises what it raises."""

from __future__ import annotations

import enum
import json
import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from supervision._worker_json import _plain, decode_frame, encode_frame
from worker_bridge import RemoteProtocolError, encode, parse_untrusted

_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text()  # any code point, lone surrogates and controls included
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


def _outcome(encoder: Any, value: Any) -> tuple[str, bytes | None]:
    try:
        return "ok", encoder(value)
    except (TypeError, ValueError) as exc:
        return type(exc).__name__, None


@given(_VALUES)
def test_encode_frame_matches_the_stdlib_encoder_byte_for_byte(value: Any) -> None:
    """Same bytes for every JSON-ish value, or the same exception type (NaN, surrogates)."""
    assert _outcome(encode_frame, value) == _outcome(encode, value)


def test_encode_frame_refuses_what_the_wire_refuses() -> None:
    """NaN, infinity and non-JSON types raise as the stdlib does (orjson would write them)."""
    with pytest.raises(ValueError, match="Out of range float"):
        encode_frame({"x": math.nan})
    with pytest.raises(ValueError, match="Out of range float"):
        encode_frame([math.inf])

    class Colour(enum.Enum):
        RED = "red"

    with pytest.raises(TypeError, match="not JSON serializable"):
        encode_frame({"c": Colour.RED})
    with pytest.raises(TypeError, match="keys must be"):
        encode_frame({("a",): 1})


def test_a_prompt_frame_takes_the_fast_path_with_the_same_bytes() -> None:
    """A prompt as the Node writes it: non-ASCII and controls kept as the stdlib keeps them."""
    frame = {"type": "prompt", "turnId": "trn_1", "text": 'é "q" \\ \n\x01 ☃',
             "sequence": 12, "epoch": 3, "data": {"a": [True, None]}}  # fmt: skip
    assert _plain(frame)
    assert encode_frame(frame) == encode(frame)


def _typed(value: Any) -> str:
    """`value` written so that 1, 1.0 and True differ (and key order shows)."""
    return json.dumps(value, ensure_ascii=True, allow_nan=True)


_LINES = (
    _VALUES.map(lambda value: encode(value) if _plain(value) else b"null")
    | st.lists(st.floats(allow_nan=False, allow_infinity=False), max_size=3).map(encode)
    | st.binary(max_size=60)
    | st.sampled_from([b'{"a":1,"a":2}', b"[NaN]", b"-0", b"1e5", b" 1", b"99999999999999999999999",
                       b"[" * 300 + b"]" * 300, b'"\\ud800"', b'{"a":1.0}', b'"\xff"'])
)  # fmt: skip


@given(_LINES)
def test_the_node_s_decoder_reads_what_the_strict_parse_reads(line: bytes) -> None:
    """Any line (a plain value as a worker writes it, arbitrary bytes, duplicate keys, NaN,
    odd numbers, deep nesting, bad UTF-8): decode_frame gives parse_untrusted's value, of
    the same types, or raises the same RemoteProtocolError."""
    outcomes = []
    for decode in (decode_frame, lambda data, limit: parse_untrusted(data, max_bytes=limit)):
        try:
            outcomes.append(_typed(decode(line, 1 << 20)))
        except RemoteProtocolError as error:
            outcomes.append(f"refused: {error}")
    assert outcomes[0] == outcomes[1]


def test_the_node_s_decoder_keeps_the_frame_bound() -> None:
    """A line over the bound is refused as parse_untrusted refuses it, however plain."""
    with pytest.raises(RemoteProtocolError, match="exceeds 8 bytes"):
        decode_frame(b'"0123456789"', 8)
