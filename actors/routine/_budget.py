"""The scheduler's launch budget, pure: at most 32 launch attempts a tick, fresh claims first,
then retries of saturated launches; a retry past its deadline expires instead."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import attrs

from ._table import SATURATION_DEADLINE_MS

MAX_LAUNCHES_PER_TICK: Final = 32


@attrs.frozen
class Candidate:
    """A claimed launching fire of some routine, as the scheduler's tick sees it."""

    routine_id: str
    fire_id: str
    claimed_ms: int
    attempts: int


@attrs.frozen
class LaunchPlan:
    launch: tuple[Candidate, ...]  # attempt these now, in this order
    expire: tuple[Candidate, ...]  # past the saturation deadline: fail them `saturated`


def plan_launches(
    candidates: Sequence[Candidate], now: int, budget: int = MAX_LAUNCHES_PER_TICK
) -> LaunchPlan:
    """At most `budget` launch attempts: fresh claims first (oldest claim first), then
    pending retries; a retry past 10 minutes after its claim expires instead. Pure."""
    expire = tuple(
        c for c in candidates if c.attempts and now >= c.claimed_ms + SATURATION_DEADLINE_MS
    )
    live = [c for c in candidates if c not in expire]
    fresh = sorted((c for c in live if c.attempts == 0), key=lambda c: (c.claimed_ms, c.fire_id))
    retry = sorted((c for c in live if c.attempts > 0), key=lambda c: (c.claimed_ms, c.fire_id))
    return LaunchPlan(tuple([*fresh, *retry][:budget]), expire)
