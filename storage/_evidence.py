"""A receipt's evidence digest, without walking the parts the storage library built itself.

The evidence digest is sha256 over the RFC 8785 canonical JSON of the receipt's facts and its
result (`digest_json` of one object, issue 20 item 5). `digest_json` first walks the whole
value to prove that orjson's sorted output is its canonical form (~2.7 µs of its ~4.3 µs on a
typical receipt). Here most of that value is known: the keys are literals, the facts are
strings checked by type, the targets are `ReceiptTarget.to_wire` dicts, and the result was
just read back from orjson, so it holds only dicts with string keys, lists, strings, ints,
floats, booleans and None. What is left to prove is that the strings are `str`, the integers
safe, the keys ASCII and nothing a float; anything else takes `digest_json` whole, so the
digest (and any error) is the same as before, byte for byte (tests/storage/test_evidence.py).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any, Final

import orjson

from maia.core import digest_json

_SAFE: Final = 2**53 - 1
_STR: Final = frozenset({str})
_SORTED: Final = orjson.OPT_SORT_KEYS


def evidence_digest(
    *,
    command_id: str,
    operation_id: str,
    actor_id: str,
    input_digest: str,
    outcome: str,
    targets: list[dict[str, Any]],
    event_ids: Sequence[str],
    effect_ids: Sequence[str],
    result: Any,
) -> str:
    """`digest_json` of the evidence object; `result` must be a value orjson read back."""
    evidence = {
        "commandId": command_id,
        "operationId": operation_id,
        "actorId": actor_id,
        "normalizedInputDigest": input_digest,
        "outcome": outcome,
        "targets": targets,
        "eventIds": event_ids,
        "effectIds": effect_ids,
        "result": result,
    }
    if (
        set(map(type, (command_id, operation_id, actor_id, input_digest, outcome))) <= _STR
        and type(event_ids) in (tuple, list)
        and type(effect_ids) in (tuple, list)
        and set(map(type, event_ids)) <= _STR
        and set(map(type, effect_ids)) <= _STR
        and _plain_targets(targets)
        and _plain_loaded(result)
    ):
        try:
            text = orjson.dumps(evidence, option=_SORTED)
        except orjson.JSONEncodeError:
            pass  # a lone surrogate, say: digest_json says what is wrong with it
        else:
            return "sha256:" + hashlib.sha256(text).hexdigest()
    # The object as it was digested before this module: targets read back, IDs as lists.
    evidence.update(
        targets=orjson.loads(orjson.dumps(targets)),
        eventIds=list(event_ids),
        effectIds=list(effect_ids),
    )
    return digest_json(evidence)


def _plain_targets(targets: list[dict[str, Any]]) -> bool:
    """Whether `to_wire` dicts hold only `str` values and safe `int` revisions (their keys
    are the literals `to_wire` writes)."""
    for target in targets:
        for value in target.values():
            kind = type(value)
            if kind is int:
                if not -_SAFE <= value <= _SAFE:
                    return False
            elif kind is not str:
                return False
    return True


def _plain_loaded(value: Any) -> bool:
    """Whether a value orjson read back is plain: no float, safe integers, ASCII keys."""
    stack = [value]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is dict:
            if not "".join(item).isascii():
                return False
            stack.extend(item.values())
        elif kind is list:
            stack.extend(item)
        elif kind is int:
            if not -_SAFE <= item <= _SAFE:
                return False
        elif kind is not str and kind is not bool and item is not None:
            return False  # a float: digest_json raises for it
    return True
