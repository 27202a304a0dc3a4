"""The field kinds of the MN0 wire shapes, on `maia.core`'s schema system.

Each helper is a `maia.core.field` with the constraint the spec gives the kind: wire IDs by
the protocol grammar, counts as safe integers from a minimum, timestamps as UTC RFC 3339
with milliseconds, digests as `sha256:` hex. The check, the JSON Schema and the doc rows all
read these constraints, so each is written once.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from maia.core import (
    DIGEST_PATTERN,
    TIMESTAMP_PATTERN,
    WIRE_ID_MAX_LENGTH,
    WIRE_ID_PATTERN,
    CrossFieldError,
    field,
)


def wire_id(doc: str, **kwargs: Any) -> Any:
    """An identifier of the protocol grammar (1-128 characters)."""
    return field(
        doc=doc,
        **kwargs,
        min_length=1,
        max_length=WIRE_ID_MAX_LENGTH,
        pattern=WIRE_ID_PATTERN,
        pattern_doc="must be a wire identifier",
    )


def count(doc: str, minimum: int, **kwargs: Any) -> Any:
    """A safe integer from `minimum` (a sequence, an epoch, a revision, a size)."""
    return field(doc=doc, minimum=minimum, **kwargs)


def timestamp(doc: str) -> Any:
    """A UTC RFC 3339 timestamp with exactly millisecond precision."""
    return field(
        doc=doc,
        pattern=TIMESTAMP_PATTERN,
        pattern_doc="must be a UTC RFC 3339 timestamp with milliseconds",
    )


def digest(doc: str) -> Any:
    """`sha256:` and 64 lowercase hex digits."""
    return field(
        doc=doc, pattern=DIGEST_PATTERN, pattern_doc="must be sha256: and 64 lowercase hex"
    )


def timestamp_ms(text: str, wire: str = "timestamp") -> int:
    """Milliseconds since the epoch of a timestamp the pattern already admitted.

    Raises `CrossFieldError` naming `wire` for text that matches the pattern but is no real
    date (30 February). The C parser, not `parse_timestamp`'s strptime: this runs for every
    grant the simulations build.
    """
    try:
        moment = datetime.fromisoformat(text)
    except (TypeError, ValueError):
        raise CrossFieldError(wire, "is not a real date and time") from None
    return int(moment.replace(microsecond=0).timestamp()) * 1000 + moment.microsecond // 1000
