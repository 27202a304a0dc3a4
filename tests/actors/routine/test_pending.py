"""maxPendingRoutineTicks in the pure launch plan: which claimed fires are taken up, which
wait, and when a waiting fire expires."""

from __future__ import annotations

from actors.routine import SATURATION_DEADLINE_MS, Candidate, PendingLimits, plan_launches


def fire(n: int, project: str, attempts: int = 0, claimed: int = 0) -> Candidate:
    return Candidate(f"r{n}", f"f{n}", claimed + n, attempts, project)


def test_a_project_takes_up_only_its_limit_oldest_claims_first() -> None:
    """Limit 1 in p: its oldest claim launches, its next waits; q (unnamed) is not held."""
    fires = [fire(2, "p"), fire(1, "p"), fire(3, "q")]
    plan = plan_launches(fires, 10, limits=PendingLimits(None, {"p": 1}))
    assert [c.fire_id for c in plan.launch] == ["f1", "f3"]
    assert [c.fire_id for c in plan.waiting] == ["f2"]
    assert plan.expire == ()


def test_a_saturated_fire_keeps_its_place_and_holds_the_next_back() -> None:
    """A taken-up fire being retried still counts: the younger claim of its Project waits."""
    fires = [fire(1, "p", attempts=2), fire(2, "p")]
    plan = plan_launches(fires, 10, limits=PendingLimits(5, {"p": 1}))
    assert [c.fire_id for c in plan.launch] == ["f1"]
    assert [c.fire_id for c in plan.waiting] == ["f2"]


def test_a_taken_up_fire_keeps_its_place_over_a_claim_of_the_same_millisecond() -> None:
    """Two claims in one ms, the later-sorting fire ID already attempted (or attached): it
    stays taken up and the other waits, so a Project's fires never swap mid-launch."""
    tried = Candidate("r9", "f9", 5, 1, "p")
    attached = Candidate("r8", "f8", 5, 0, "p", attached=True)
    for senior in (tried, attached):
        plan = plan_launches([Candidate("r1", "f1", 5, 0, "p"), senior], 10,
                             limits=PendingLimits(None, {"p": 1}))  # fmt: skip
        assert ([c.fire_id for c in plan.launch], [c.fire_id for c in plan.waiting]) == (
            [senior.fire_id], ["f1"])  # fmt: skip


def test_the_nodes_limit_bounds_all_projects_together() -> None:
    """Node limit 2 over three Projects allowing 5 each: the two oldest claims launch."""
    fires = [fire(1, "a"), fire(2, "b"), fire(3, "c")]
    plan = plan_launches(fires, 10, limits=PendingLimits(2, {"a": 5, "b": 5, "c": 5}))
    assert [c.fire_id for c in plan.launch] == ["f1", "f2"]
    assert [c.fire_id for c in plan.waiting] == ["f3"]


def test_a_limit_of_zero_launches_nothing_and_the_wait_expires_saturated() -> None:
    """Limit 0: nothing of p launches; past the deadline after its claim the fire expires."""
    fires = [fire(1, "p")]
    held = plan_launches(fires, SATURATION_DEADLINE_MS, limits=PendingLimits(None, {"p": 0}))
    assert (held.launch, [c.fire_id for c in held.waiting]) == ((), ["f1"])
    gone = plan_launches(fires, SATURATION_DEADLINE_MS + 1, limits=PendingLimits(None, {"p": 0}))
    assert (gone.launch, gone.waiting, [c.fire_id for c in gone.expire]) == ((), (), ["f1"])


def test_without_limits_the_plan_is_the_budget_alone() -> None:
    """No PendingLimits: every fresh claim is launched, none waits."""
    plan = plan_launches([fire(1, "p"), fire(2, "p")], 10)
    assert ([c.fire_id for c in plan.launch], plan.waiting) == (["f1", "f2"], ())
