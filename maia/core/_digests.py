"""Digests: `sha256:` + lowercase hex, over RFC 8785 canonical JSON or over raw bytes.

Canonical JSON refuses floats and integers beyond ±(2^53 - 1) (rfc8785 does): such values
must travel as strings so every implementation digests them alike.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any, Final

import rfc8785

DIGEST_PATTERN: Final = r"^sha256:[0-9a-f]{64}$"
_DIGEST_RE: Final = re.compile(DIGEST_PATTERN)


def canonical_json(value: Any) -> bytes:
    """RFC 8785 canonical UTF-8 bytes of a JSON value.

    Raises ValueError for floats (Maia's digested values never carry them: two
    implementations may disagree on a float's text), integers outside the safe range,
    non-string keys and values JSON cannot carry.
    """
    _refuse_floats(value)
    return rfc8785.dumps(value)


def _refuse_floats(value: Any) -> None:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, float):
            raise ValueError("floats have no canonical form here; send them as strings")
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)


def digest_bytes(data: bytes) -> str:
    """`sha256:<hex>` of raw bytes."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


def digest_json(value: Any) -> str:
    """`sha256:<hex>` of the RFC 8785 canonical form of a JSON value."""
    return digest_bytes(canonical_json(value))


def is_digest(value: str) -> bool:
    return _DIGEST_RE.match(value) is not None
