"""`supervision._worker_json.encode_frame`: the Node's frame encoder writes what the stdlib one
writes, and raises what it raises."""

from __future__ import annotations

import enum
import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from supervision._worker_json import _plain, encode_frame
from worker_bridge import encode

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
