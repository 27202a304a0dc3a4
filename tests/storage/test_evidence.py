"""The receipt's evidence digest: the same digest, and the same errors, as `digest_json` of the
evidence object as it was built before (targets read back through orjson, IDs as lists)."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from maia.core import digest_json
from storage._evidence import evidence_digest

# Keys and text from every alphabet (surrogates too), integers on both sides of ±(2^53 - 1),
# floats: what decides between the fast path and `digest_json`.
_text = st.text(max_size=6)
_ints = st.integers(min_value=-(2**60), max_value=2**60) | st.sampled_from(
    [2**53 - 1, 2**53, -(2**53 - 1), -(2**53)]
)
_scalars = st.none() | st.booleans() | _ints | _text | st.floats(allow_nan=False)
_json = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_text, inner, max_size=3),
    max_leaves=8,
)
_target = st.fixed_dictionaries(
    {"targetType": _text, "targetId": _text, "disposition": _text},
    optional={"priorRevision": _ints, "resultRevision": _ints},
)


def _before(facts: dict[str, Any]) -> str:
    """The digest as `_write_receipt` computed it before `evidence_digest` existed."""
    return digest_json(
        {
            "commandId": facts["command_id"],
            "operationId": facts["operation_id"],
            "actorId": facts["actor_id"],
            "normalizedInputDigest": facts["input_digest"],
            "outcome": facts["outcome"],
            "targets": orjson.loads(orjson.dumps(facts["targets"])),
            "eventIds": list(facts["event_ids"]),
            "effectIds": list(facts["effect_ids"]),
            "result": facts["result"],
        }
    )


def _outcome(fn: Any, facts: dict[str, Any]) -> tuple[str, Any]:
    try:
        return "value", fn(facts)
    except Exception as error:  # the same error type, whichever path raised it
        return "error", type(error)


@given(
    strings=st.lists(_text, min_size=5, max_size=5),
    targets=st.lists(_target, max_size=3),
    event_ids=st.lists(_text, max_size=3).map(tuple),
    effect_ids=st.lists(_text, max_size=2),
    result=_json,
)
def test_evidence_digest_matches_digest_json(
    strings: list[str],
    targets: list[dict[str, Any]],
    event_ids: tuple[str, ...],
    effect_ids: list[str],
    result: Any,
) -> None:
    """Over any facts, targets and result (read back through orjson, as the receipt's is),
    the digest, or the error, equals the one digest_json gives for the whole object."""
    try:
        loaded = orjson.loads(orjson.dumps(result))
    except orjson.JSONEncodeError:
        loaded = result  # a lone surrogate: orjson could not have read it back either
    names = ("command_id", "operation_id", "actor_id", "input_digest", "outcome")
    facts: dict[str, Any] = dict(zip(names, strings, strict=True))
    facts.update(targets=targets, event_ids=event_ids, effect_ids=effect_ids, result=loaded)
    assert _outcome(lambda f: evidence_digest(**f), facts) == _outcome(_before, facts)


def test_a_typical_receipt_takes_the_fast_path_and_digests_alike() -> None:
    """A session.create receipt's facts digest to the same value both ways."""
    facts: dict[str, Any] = {
        "command_id": "cmd-1",
        "operation_id": "session.create",
        "actor_id": "actor_local_user",
        "input_digest": "sha256:" + "a" * 64,
        "outcome": "applied",
        "targets": [
            {"targetType": "session", "targetId": "s", "resultRevision": 1, "disposition": "c"}
        ],
        "event_ids": ("event_f" + "0" * 49,),
        "effect_ids": (),
        "result": {"sessionId": "s", "revision": 1, "labels": {"k": "é"}},
    }
    assert evidence_digest(**facts) == _before(facts)


@pytest.mark.parametrize("bad", [1.5, 2**53, {"ключ": 1}, [True, None, "x"]])
def test_values_off_the_fast_path_digest_as_digest_json_does(bad: Any) -> None:
    """A float, an unsafe integer, a non-ASCII key: the same digest or error as digest_json."""
    facts: dict[str, Any] = {
        **dict.fromkeys(("command_id", "operation_id", "actor_id", "input_digest"), "x"),
        "outcome": "applied",
        "targets": [],
        "event_ids": (),
        "effect_ids": (),
        "result": bad,
    }
    assert _outcome(lambda f: evidence_digest(**f), facts) == _outcome(_before, facts)
