"""Identifiers: generation of `<prefix>_<32 hex>` IDs and the wire grammar.

The wire accepts any identifier of 1–128 characters matching the protocol grammar; the Node
generates IDs with a known type prefix and 128 bits of entropy.
"""

from __future__ import annotations

import re
import secrets
from typing import Final

from ._errors import MaiaError

WIRE_ID_PATTERN: Final = r"^[A-Za-z0-9][A-Za-z0-9._:-]*$"
WIRE_ID_MAX_LENGTH: Final = 128
GENERATED_ID_PATTERN: Final = r"^[a-z][a-z0-9-]{1,31}_[0-9a-f]{32}$"

ID_PREFIXES: Final = frozenset(
    {
        "project",
        "session",
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
    }
)

_WIRE_RE: Final = re.compile(WIRE_ID_PATTERN)
_GENERATED_RE: Final = re.compile(GENERATED_ID_PATTERN)


def new_id(prefix: str) -> str:
    """A fresh `<prefix>_<32 lowercase hex>` ID. Raises ValueError for an unknown prefix."""
    if prefix not in ID_PREFIXES:
        raise ValueError(f"unknown ID prefix {prefix!r}")
    return f"{prefix}_{secrets.token_hex(16)}"


def is_wire_id(value: str) -> bool:
    """Whether `value` is an identifier the wire accepts."""
    return 1 <= len(value) <= WIRE_ID_MAX_LENGTH and _WIRE_RE.match(value) is not None


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
    if _GENERATED_RE.match(value) is None:
        return None
    return value.rsplit("_", 1)[0]
