"""The retry schedule: immediately, 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h, then failed."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from actors.webhook import MAX_ATTEMPTS, RETRY_SCHEDULE_MS, next_attempt_at, schedule_text


def test_the_schedule_reads_as_documented() -> None:
    """The people-facing text is the one docs/webhooks.md states."""
    assert schedule_text() == ("immediately, 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h, then failed")


def test_each_step_and_the_end() -> None:
    """Attempt n+1 waits step n after attempt n failed; the ninth never comes."""
    assert [next_attempt_at(n, 1000) for n in range(MAX_ATTEMPTS)] == [
        1000 + d for d in RETRY_SCHEDULE_MS
    ]
    assert next_attempt_at(MAX_ATTEMPTS, 1000) is None
    with pytest.raises(ValueError, match="attempts_made"):
        next_attempt_at(-1, 0)


@given(st.integers(1, MAX_ATTEMPTS - 1), st.integers(0, 36_000_000))
def test_retry_after_is_never_undercut(attempts: int, retry_after: int) -> None:
    """With Retry-After the wait is the larger of the step and what the receiver asked."""
    due = next_attempt_at(attempts, 0, retry_after)
    assert due == max(RETRY_SCHEDULE_MS[attempts], retry_after)
