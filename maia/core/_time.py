"""Timestamps, durations and revisions as the wire carries them.

Timestamps are UTC RFC 3339 with exactly millisecond precision (`2026-11-30T01:02:03.004Z`);
durations are integer milliseconds; revisions are positive safe integers.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from ._errors import MaiaError

TIMESTAMP_PATTERN: Final = r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$"
MAX_SAFE_INTEGER: Final = 2**53 - 1
_TIMESTAMP_RE: Final = re.compile(TIMESTAMP_PATTERN)


def _error(code: str, message: str, details: dict[str, object]) -> MaiaError:
    # Loaded when a value is refused: rendering a time (the CLI's one-call path) does not
    # import the error type, nor attrs under it.
    from ._errors import MaiaError

    return MaiaError(code, message, details)


def format_timestamp_ms(epoch_ms: int) -> str:
    """RFC 3339 UTC text of a wall-clock reading in integer milliseconds since the epoch."""
    seconds, millis = divmod(epoch_ms, 1000)
    moment = datetime.fromtimestamp(seconds, tz=UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S") + f".{millis:03d}Z"


def parse_timestamp(text: str, field: str = "timestamp") -> int:
    """Milliseconds since the epoch of an RFC 3339 ms UTC timestamp.

    Raises `validation_failed` naming `field` for any other form.
    """
    if _TIMESTAMP_RE.fullmatch(text) is None:
        raise _error(
            "validation_failed",
            f"{field}: must be a UTC RFC 3339 timestamp with milliseconds",
            {"path": field},
        )
    try:
        moment = datetime.strptime(text[:-1], "%Y-%m-%dT%H:%M:%S.%f").replace(tzinfo=UTC)
    except ValueError:
        raise _error(
            "validation_failed", f"{field}: is not a real date and time", {"path": field}
        ) from None
    return int(moment.timestamp()) * 1000 + moment.microsecond // 1000


def check_revision(value: object, field: str = "revision") -> int:
    """Return `value` if it is a positive safe integer; raise `validation_failed` otherwise."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_SAFE_INTEGER:
        raise _error(
            "validation_failed", f"{field}: must be a positive safe integer", {"path": field}
        )
    return value
