"""The scheduler's launch budget, pure: at most 32 launch attempts a tick, fresh claims first,
then retries of saturated launches; a retry past its deadline expires instead.

maxPendingRoutineTicks (`PendingLimits`) bounds the fires being launched at once: of a
Project's claimed launching fires only the oldest `limit` claims are taken up (attempted, and
retried while saturated), and of those on the whole Node only the oldest `node` claims. The
rest wait, still `launching` and never attempted, until one taken up leaves `launching`; a
waiting fire past the saturation deadline (10 minutes after its claim) expires `saturated`
like a retry does, so no wait is unbounded.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
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
    project_id: str = ""
    attached: bool = False  # a Session was made for it: it was taken up before


@attrs.frozen
class PendingLimits:
    """maxPendingRoutineTicks: `node` the user's value (None: unbounded), `projects` each
    Project's effective value (the smaller of user and Project); a Project not named is
    bounded by the Node's value only."""

    node: int | None = None
    projects: Mapping[str, int] = attrs.field(factory=dict)


@attrs.frozen
class LaunchPlan:
    launch: tuple[Candidate, ...]  # attempt these now, in this order
    expire: tuple[Candidate, ...]  # past the saturation deadline: fail them `saturated`
    waiting: tuple[Candidate, ...] = ()  # held back by maxPendingRoutineTicks


def _by_claim(c: Candidate) -> tuple[int, str]:
    return (c.claimed_ms, c.fire_id)


def _by_seniority(c: Candidate) -> tuple[bool, int, str]:
    """Fires taken up before (attempted this run, or attached to a Session) keep their place
    ahead of fresh claims: two claims in the same millisecond would otherwise swap on the
    fire ID once the first has been attempted."""
    return (not (c.attempts or c.attached), c.claimed_ms, c.fire_id)


def take_up(
    candidates: Sequence[Candidate], limits: PendingLimits
) -> tuple[list[Candidate], list[Candidate]]:
    """(taken up, waiting): the oldest claims within each Project's limit, then within the
    Node's. Pure."""
    taken: list[Candidate] = []
    waiting: list[Candidate] = []
    per_project: dict[str, int] = {}
    for c in sorted(candidates, key=_by_seniority):
        limit = limits.projects.get(c.project_id)
        count = per_project.get(c.project_id, 0)
        node_full = limits.node is not None and len(taken) >= limits.node
        if node_full or (limit is not None and count >= limit):
            waiting.append(c)
            continue
        per_project[c.project_id] = count + 1
        taken.append(c)
    return taken, waiting


def plan_launches(
    candidates: Sequence[Candidate],
    now: int,
    budget: int = MAX_LAUNCHES_PER_TICK,
    limits: PendingLimits | None = None,
) -> LaunchPlan:
    """At most `budget` launch attempts among the fires taken up: fresh claims first (oldest
    claim first), then pending retries; a retry, or a waiting fire, past 10 minutes after its
    claim expires instead. Pure."""
    taken, held = take_up(candidates, limits or PendingLimits())
    expired = [c for c in held if now >= c.claimed_ms + SATURATION_DEADLINE_MS]
    expired += [c for c in taken if c.attempts and now >= c.claimed_ms + SATURATION_DEADLINE_MS]
    live = [c for c in taken if c not in expired]
    fresh = sorted((c for c in live if c.attempts == 0), key=_by_claim)
    retry = sorted((c for c in live if c.attempts > 0), key=_by_claim)
    waiting = tuple(c for c in held if c not in expired)
    return LaunchPlan(tuple([*fresh, *retry][:budget]), tuple(sorted(expired, key=_by_claim)),
                      waiting)  # fmt: skip
