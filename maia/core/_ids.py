"""Identifiers: generation of `<prefix>_<32 hex>` IDs and the wire grammar.

The wire accepts any identifier of 1–128 characters matching the protocol grammar; the Node
generates IDs with a known type prefix and 128 bits of entropy, which match the spec's
target identifier grammar (`ID_GRAMMAR_PATTERN`). Time-ordered IDs (`storage.new_ordered_id`)
put 18 hex digits of time and sequence before their 32 random ones (`<prefix>_<50 hex>`);
rows written before that carry 32 hex digits and stay valid.

Why a pool: one `os.urandom` call per ID was measured at up to 0.4 ms on the Node's hot path
(a syscall that releases the GIL, then waits to take it back from the storage thread). The
pool reads 4 KiB from the OS CSPRNG at once and hands out 16 fresh bytes per ID, each byte
exactly once (under a lock, across threads); a forked child drops the parent's pool so it
never repeats the parent's IDs.
"""

from __future__ import annotations

import os
import re
import threading
from typing import Final

from ._errors import MaiaError

WIRE_ID_PATTERN: Final = r"^[A-Za-z0-9][A-Za-z0-9._:-]*$"
WIRE_ID_MAX_LENGTH: Final = 128
# What the Node mints: 32 hex (random) or 50 hex (time-ordered: 18 of time, then 32 random).
GENERATED_ID_PATTERN: Final = r"^[a-z][a-z0-9-]{1,31}_(?:[0-9a-f]{32}|[0-9a-f]{50})$"
# The spec's identifier grammar (type prefix, 128 bits of entropy in 16-128 characters).
ID_GRAMMAR_PATTERN: Final = r"^[a-z][a-z0-9-]{1,31}_[A-Za-z0-9_-]{16,128}$"

ID_PREFIXES: Final = frozenset(
    {
        "project",
        "session",
        "approval",
        "turn",
        "item",
        "activation",
        "attempt",
        "message",
        "routine",
        "tick",
        "node",
        "attachment",
        "connection",
        "effect",
        "event",
        "receipt",
        "artifact",
        "evaluation",
        "preview",
        "command",
        "webhook",
        "assignment",
        "snapshot",
    }
)

# The patterns end in `$` (ECMA-262 for the published schemas); Python must fullmatch them:
# `match` lets a final newline through (`abc\n`).
_WIRE_RE: Final = re.compile(WIRE_ID_PATTERN)
_GENERATED_RE: Final = re.compile(GENERATED_ID_PATTERN)

_POOL_BYTES: Final = 4096
_ID_HEX: Final = 32  # 16 bytes, 128 bits
_pool_lock = threading.Lock()
_pool = ""  # hex of OS random bytes; [_pool_at:] is not handed out yet
_pool_at = 0


def _drop_pool() -> None:
    global _pool, _pool_at
    _pool, _pool_at = "", 0


os.register_at_fork(after_in_child=_drop_pool)


def random_hex() -> str:
    """32 lowercase hex digits (128 bits) from the OS CSPRNG, never handed out before."""
    global _pool, _pool_at
    with _pool_lock:
        start = _pool_at
        if start + _ID_HEX > len(_pool):
            _pool, start = os.urandom(_POOL_BYTES).hex(), 0
        _pool_at = start + _ID_HEX
        return _pool[start : start + _ID_HEX]


def new_id(prefix: str) -> str:
    """A fresh `<prefix>_<32 lowercase hex>` ID. Raises ValueError for an unknown prefix."""
    if prefix not in ID_PREFIXES:
        raise ValueError(f"unknown ID prefix {prefix!r}")
    return f"{prefix}_{random_hex()}"


def is_wire_id(value: str) -> bool:
    """Whether `value` is an identifier the wire accepts."""
    return 1 <= len(value) <= WIRE_ID_MAX_LENGTH and _WIRE_RE.fullmatch(value) is not None


def check_wire_id(value: str, field: str = "id") -> str:
    """Return `value` if the wire accepts it; raise `validation_failed` naming `field`."""
    if not is_wire_id(value):
        raise MaiaError(
            "validation_failed",
            f"{field}: must be 1-{WIRE_ID_MAX_LENGTH} characters matching {WIRE_ID_PATTERN}",
            {"path": field},
        )
    return value


def id_prefix(value: str) -> str | None:
    """The type prefix of a generated ID, or None when `value` is not one."""
    if _GENERATED_RE.fullmatch(value) is None:
        return None
    return value.rsplit("_", 1)[0]
