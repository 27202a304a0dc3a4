"""Field kinds every wire shape shares: exact IDs, timestamps and digests.

The operation registry's ops and the MN0 lease shapes declare these fields the same way, so
each constraint and its refusal phrase is written once, here.
"""

from __future__ import annotations

from typing import Any

from ._digests import DIGEST_PATTERN
from ._fields import field
from ._ids import WIRE_ID_MAX_LENGTH, WIRE_ID_PATTERN
from ._time import TIMESTAMP_PATTERN

ID_PHRASE = (
    "must be an identifier: 1-128 characters of A-Z a-z 0-9 . _ : -, led by a letter or digit"
)


def id_field(doc: str, **kwargs: Any) -> Any:
    """An exact protocol identifier (operations take exact IDs, never prefixes)."""
    return field(
        doc=doc,
        min_length=1,
        max_length=WIRE_ID_MAX_LENGTH,
        pattern=WIRE_ID_PATTERN,
        pattern_doc=ID_PHRASE,
        **kwargs,
    )


def timestamp_field(doc: str, **kwargs: Any) -> Any:
    """A UTC RFC 3339 timestamp with exactly millisecond precision."""
    return field(
        doc=doc,
        pattern=TIMESTAMP_PATTERN,
        pattern_doc="must be a UTC RFC 3339 timestamp with milliseconds",
        **kwargs,
    )


def digest_field(doc: str, **kwargs: Any) -> Any:
    """`sha256:` and 64 lowercase hex digits."""
    return field(
        doc=doc, pattern=DIGEST_PATTERN, pattern_doc="must be sha256: and 64 hex", **kwargs
    )
