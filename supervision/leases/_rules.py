"""The four lease rules a planted-bug test may swap, gathered in one policy object.

Production code passes `RULES`. The simulation's mutation tests pass a `LeaseRules` with one
rule replaced by the broken variant the spec warns about, and expect the harness to report
a violation: that is how the harness proves it can see each bug. Nothing outside tests
builds a non-default `LeaseRules`.
"""

from __future__ import annotations

from collections.abc import Callable

import attrs

GrantKey = tuple[int, int]
"""(leaseEpoch, renewalSequence)."""


def anchor_at_first_send(first_send_ms: int, receive_ms: int) -> int:
    """Item 3: the deadline counts from the request's first send, never the receive."""
    return first_send_ms


def never_lower(current_ms: int | None, candidate_ms: int) -> int:
    """Item 4: a later, shorter grant never lowers the horizon."""
    return candidate_ms if current_ms is None else max(current_ms, candidate_ms)


def issued_after_barrier(confirmed: GrantKey, barrier: GrantKey) -> bool:
    """Item 4: only a grant issued after the discontinuity clears its barrier."""
    return confirmed > barrier


def after_cleanup(cleanup_reconciled: bool, horizon_reached: bool) -> bool:
    """Item 10: expiry alone never authorizes a replacement launch."""
    return cleanup_reconciled


@attrs.frozen
class LeaseRules:
    """The swappable rules; every default is the spec's rule."""

    deadline_anchor: Callable[[int, int], int] = anchor_at_first_send
    next_horizon: Callable[[int | None, int], int] = never_lower
    barrier_clears: Callable[[GrantKey, GrantKey], bool] = issued_after_barrier
    may_replace: Callable[[bool, bool], bool] = after_cleanup


RULES = LeaseRules()
