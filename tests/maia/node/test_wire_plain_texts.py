"""`parse_request`'s orjson path against its strict parse alone, over request texts of every
spelling a client could send (whitespace, escapes of any code point and lone surrogates,
numbers in every form, NaN, duplicate keys, deep nesting) and over the compact form the SDK
writes (orjson's own, which takes the fast path): the same `Request`, with the same types,
or the same typed refusal."""

from __future__ import annotations

import json
from typing import Any
from unittest import mock

import orjson
from hypothesis import given
from hypothesis import strategies as st

from maia.core import MaiaError
from maia.node import _wire
from maia.node._wire import parse_request
from tests.supervision.test_worker_json_texts import DEEP, TEXTS, WS

ENVELOPES = st.one_of(
    st.builds("{{{}\"id\":1,\"method\":\"session.list\",\"params\":{}}}".format, WS, TEXTS),
    st.builds('{{"id":{},"method":"turn.send","params":{{"text":{}}}}}'.format,
              st.sampled_from(["1", "0", "-1", "1.0", "true", '"a"', "9007199254740992"]),
              TEXTS),
    TEXTS,
    DEEP,
)  # fmt: skip
VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.text(max_size=8)
    | st.floats(allow_nan=False),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner,
                                                                max_size=3),
    max_leaves=10,
)  # fmt: skip
COMPACT = st.builds(
    lambda request_id, params: orjson.dumps(
        {"id": request_id, "method": "turn.send", "params": params}
    ).decode(),
    st.integers(0, 2**53) | st.text(min_size=1, max_size=8),
    st.dictionaries(st.text(max_size=6), VALUES, max_size=4),
)


def _outcome(frame: str) -> str:
    try:
        request = parse_request(frame)
    except MaiaError as error:
        return f"refused: {error.code} {error.message} {error.details}"
    except RecursionError:
        return "recursion"
    return json.dumps([request.id, request.method, request.params], allow_nan=True)


def _strict_outcome(frame: str) -> str:
    with mock.patch.object(_wire, "_as_orjson_writes_it", return_value=_wire._NOT_PLAIN):
        return _outcome(frame)


@given(ENVELOPES | COMPACT)
def test_the_orjson_path_gives_what_the_strict_parse_gives(frame: str) -> None:
    """Any request text: parse_request answers as its strict parse alone does."""
    assert _outcome(frame) == _strict_outcome(frame)


def test_the_sdk_s_compact_form_takes_the_orjson_path() -> None:
    """The frame the SDK writes is read by orjson (the fast path is not dead code)."""
    frame = orjson.dumps({"id": 7, "method": "turn.send", "params": {"text": "hé \U0001f600"}})
    value: Any = _wire._as_orjson_writes_it(frame.decode())
    assert value == {"id": 7, "method": "turn.send", "params": {"text": "hé \U0001f600"}}
    assert _wire._as_orjson_writes_it('{"id":1, "method":"x"}') is _wire._NOT_PLAIN
