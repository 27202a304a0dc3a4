"""Arbitrary JSON requests at a real Node process's socket (Hypothesis, bounded): envelopes
whose `method` is a registered op (or not), whose `id` and `params` are any JSON. Every
frame gets exactly one answer: a JSON object with `ok`, the `id` back when it was a valid
one, a failure's code from the closed set with `retryable` a boolean and `details` an
object; the connection keeps serving, and so does a second client alongside."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from maia.core import ERROR_CODES
from maia.protocol import REGISTRY
from tests.maia.node.conftest import NodeProcess

from ._wire import RawApi

# Reads only: a generated request must not start workers or write Sessions at random.
READS = sorted(op.operation_id for op in REGISTRY if op.risk == "read")
SCALARS = st.none() | st.booleans() | st.integers(-(2**60), 2**60) | st.text(max_size=20)
JSON = st.recursive(
    SCALARS | st.floats(allow_nan=False, allow_infinity=False),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4)
    ),
    max_leaves=12,
)
IDS = st.integers(0, 2**53 - 1) | st.text(min_size=1, max_size=12) | JSON
METHODS = st.sampled_from([*READS, "no.such_op", ""]) | st.text(max_size=20) | JSON


def _valid_id(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return 0 <= value <= 2**53 - 1
    return isinstance(value, str) and 1 <= len(value) <= 128


@pytest.fixture(scope="module")
def pair(node_process: NodeProcess) -> Iterator[tuple[RawApi, RawApi]]:
    """Two hello'd connections to the module's Node: the one fuzzed and a bystander."""
    with (
        RawApi(node_process.port, node_process.token) as fuzzed,
        RawApi(node_process.port, node_process.token) as bystander,
    ):
        fuzzed.hello()
        bystander.hello()
        yield fuzzed, bystander


@settings(max_examples=120, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    request_id=IDS,
    method=METHODS,
    params=st.dictionaries(st.text(max_size=16), JSON, max_size=4) | JSON,
    drop=st.sets(st.sampled_from(["id", "method", "params"]), max_size=2),
)
def test_any_envelope_gets_one_typed_answer(
    pair: tuple[RawApi, RawApi], request_id: Any, method: Any, params: Any, drop: set[str]
) -> None:
    """One answer per frame, typed; the connection and a bystander keep serving."""
    fuzzed, bystander = pair
    if method == "session.wait" or method == "turn.wait":
        method = "node.status"  # a wait could hold the answer for 4 s
    request = {"id": request_id, "method": method, "params": params}
    for key in drop:
        del request[key]
    answer = fuzzed.ask(json.dumps(request).encode())
    assert set(answer) >= {"id", "ok"}
    if "id" in request and _valid_id(request_id):
        assert answer["id"] == request_id
    if answer["ok"] is False:
        error = answer["error"]
        assert error["code"] in ERROR_CODES
        assert isinstance(error["retryable"], bool)
        assert isinstance(error["details"], dict)
        assert isinstance(error["message"], str)
        assert error["message"]
        assert error["code"] != "internal_error", error
    else:
        assert "result" in answer
    assert fuzzed.ask({"id": "after", "method": "node.status", "params": {}})["ok"] is True
    assert bystander.ask({"id": "bystander", "method": "node.status", "params": {}})["ok"]
