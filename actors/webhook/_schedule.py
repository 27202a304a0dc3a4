"""The retry schedule of a delivery (pure): when the next attempt is due, or that none is.

Attempt 1 goes out immediately; after each failed attempt the next waits the step below
(Svix's schedule): 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h. Eight attempts in all over about
27.6 hours; after the eighth failure the delivery is `failed` (a `redeliver` can queue it
again). A `Retry-After` from a 429 or 503 is honoured by never retrying sooner than it asks
(capped at 10 h in `_http`), so the wait is the larger of the two.
"""

from __future__ import annotations

from typing import Final

# Delay before attempt n+1 (index n): attempt 1 immediately, then the retries.
RETRY_SCHEDULE_MS: Final = (
    0,
    5_000,
    300_000,
    1_800_000,
    7_200_000,
    18_000_000,
    36_000_000,
    36_000_000,
)
MAX_ATTEMPTS: Final = len(RETRY_SCHEDULE_MS)


def next_attempt_at(
    attempts_made: int, failed_at_ms: int, retry_after_ms: int | None = None
) -> int | None:
    """When the next attempt is due after `attempts_made` attempts, the last failing at
    `failed_at_ms`; None once the schedule is spent. Raises ValueError for a negative count."""
    if attempts_made < 0:
        raise ValueError("attempts_made must be >= 0")
    if attempts_made >= MAX_ATTEMPTS:
        return None
    delay = RETRY_SCHEDULE_MS[attempts_made]
    if retry_after_ms is not None and attempts_made > 0:
        delay = max(delay, retry_after_ms)
    return failed_at_ms + delay


def schedule_text() -> str:
    """The schedule as people read it: "immediately, 5 s, 5 min, ..., then failed"."""

    def spoken(ms: int) -> str:
        if ms == 0:
            return "immediately"
        for unit, size in (("h", 3_600_000), ("min", 60_000), ("s", 1000)):
            if ms % size == 0:
                return f"{ms // size} {unit}"
        return f"{ms} ms"

    return ", ".join(spoken(ms) for ms in RETRY_SCHEDULE_MS) + ", then failed"
