"""The field kinds of the MN0 wire shapes, on `maia.core`'s schema system.

The ID, timestamp and digest kinds are `maia.core`'s, shared with the registry's ops; IDs by
the protocol grammar, counts as safe integers from a minimum, timestamps as UTC RFC 3339
with milliseconds, digests as `sha256:` hex. The check, the JSON Schema and the doc rows all
read these constraints, so each is written once.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from maia.core import CrossFieldError, digest_field, field, id_field, timestamp_field

wire_id = id_field  # an identifier of the protocol grammar (1-128 characters)
timestamp = timestamp_field  # a UTC RFC 3339 timestamp with exactly millisecond precision
digest = digest_field  # `sha256:` and 64 lowercase hex digits


def count(doc: str, minimum: int, **kwargs: Any) -> Any:
    """A safe integer from `minimum` (a sequence, an epoch, a revision, a size)."""
    return field(doc=doc, minimum=minimum, **kwargs)


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
