"""Digests: `sha256:` + lowercase hex, over RFC 8785 canonical JSON or over raw bytes.

Canonical JSON refuses floats and integers beyond ±(2^53 - 1) (rfc8785 does): such values
must travel as strings so every implementation digests them alike.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any, Final

import orjson
import rfc8785

_SAFE_INTEGER: Final = 2**53 - 1
_STR: Final = frozenset({str})
DIGEST_PATTERN: Final = r"^sha256:[0-9a-f]{64}$"
_DIGEST_RE: Final = re.compile(DIGEST_PATTERN)


def canonical_json(value: Any) -> bytes:
    """RFC 8785 canonical UTF-8 bytes of a JSON value.

    Raises ValueError for floats (Maia's digested values never carry them: two
    implementations may disagree on a float's text), integers outside the safe range,
    non-string keys and values JSON cannot carry.

    Fast path: a value of plain dicts with ASCII keys, lists, tuples, strings, safe
    integers, booleans and None has one JSON text with keys sorted, and orjson's sorted
    output is it (orjson escapes exactly what RFC 8785 escapes, and for ASCII keys code
    point order is UTF-16 order); it is ~30x cheaper than rfc8785, which takes the rest.
    """
    if _plain(value):
        try:
            return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
        except orjson.JSONEncodeError:
            pass  # a lone surrogate, say: rfc8785 says what is wrong with it
    return rfc8785.dumps(value)


def _plain(value: Any) -> bool:
    """Whether `value` takes the fast path; raises ValueError on a float anywhere in it."""
    plain = True
    stack = [value]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is str or kind is bool or item is None:
            continue
        if kind is int:
            plain = plain and -_SAFE_INTEGER <= item <= _SAFE_INTEGER
        elif kind is dict:
            plain = plain and set(map(type, item)) <= _STR and "".join(item).isascii()
            stack.extend(item.values())
        elif kind is list or kind is tuple:
            stack.extend(item)
        elif isinstance(item, float):
            raise ValueError("floats have no canonical form here; send them as strings")
        else:  # a subclass or another type: rfc8785 decides, after the float check
            plain = False
            if isinstance(item, dict):
                stack.extend(item.values())
            elif isinstance(item, list | tuple):
                stack.extend(item)
    return plain


def digest_bytes(data: bytes) -> str:
    """`sha256:<hex>` of raw bytes."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


def digest_json(value: Any) -> str:
    """`sha256:<hex>` of the RFC 8785 canonical form of a JSON value."""
    return digest_bytes(canonical_json(value))


def is_digest(value: str) -> bool:
    return _DIGEST_RE.fullmatch(value) is not None
