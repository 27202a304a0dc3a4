"""The pure routine core: examples, weeks of virtual time across both zones' DST nights
against an independent table, and the launch budget."""

from __future__ import annotations

import math

import pytest

from actors.routine import (
    MAX_LAUNCHES_PER_TICK,
    SATURATION_DEADLINE_MS,
    Attached,
    Candidate,
    Core,
    Disable,
    FailReason,
    FireEvent,
    FireState,
    Launched,
    LaunchRefused,
    Pause,
    RecordFire,
    Recover,
    Resume,
    RoutineState,
    Run,
    Schedule,
    SetRoutine,
    SlotsOmitted,
    Tick,
    Trigger,
    TurnSettled,
    cron_fire_id,
    plan_launches,
    step,
)
from maia.core import MaiaError

from ._tables import BERLIN, MINUTE, NY, expected_fixed, expected_hourly, ms

HOUR = 60 * MINUTE


def core(cron: str = "0 * * * *", zone: str = "UTC", now: int = 0, **kw: object) -> Core:
    schedule = Schedule.parse(cron, zone)
    defaults: dict[str, object] = {
        "routine_id": "routine_" + "a" * 32,
        "state": RoutineState.ACTIVE,
        "revision": 1,
        "schedule": schedule,
        "next_fire_ms": schedule.next_after(now),
    }
    return Core(**{**defaults, **kw})  # type: ignore[arg-type]


def records(actions: tuple[object, ...]) -> list[RecordFire]:
    return [a for a in actions if isinstance(a, RecordFire)]


def settle_all(state: Core, now: int) -> Core:
    """Launch and finish every claimed fire at once (the Session ran instantly)."""
    for fire in state.fires:
        if fire.state is FireState.LAUNCHING and fire.claimed_ms is not None:
            state, _ = step(state, Launched(fire.fire_id, "session_x", "turn_x"), now)
        state, _ = step(state, TurnSettled(fire.fire_id), now)
    return state


def test_due_slot_is_claimed_and_next_fire_advances_in_one_step() -> None:
    """A tick at the slot records one launching fire and moves nextFireAt in one answer."""
    state = core(now=ms("2026-01-01T00:10"))
    state, actions = step(state, Tick(), ms("2026-01-01T01:00"))
    (record,) = records(actions)
    assert record.event is FireEvent.CLAIM
    assert record.fire.fire_id == cron_fire_id(state.routine_id, ms("2026-01-01T01:00"))
    assert record.fire.claimed_ms == ms("2026-01-01T01:00")
    assert actions[-1] == SetRoutine(RoutineState.ACTIVE, 1, ms("2026-01-01T02:00"),
                                     "routine.slot_claimed")  # fmt: skip
    again, more = step(state, Tick(), ms("2026-01-01T01:30"))
    assert more == ()  # nothing is due twice
    assert again == state


def test_a_late_claim_fires_the_newest_slot_and_records_the_missed_ones() -> None:
    """Down from 00:10 to 05:20: 05:00 fires; 01:00-04:00 are skipped with reason missed."""
    state = core(now=ms("2026-01-01T00:10"))
    state, actions = step(state, Tick(), ms("2026-01-01T05:20"))
    fired = records(actions)
    assert [(r.fire.scheduled_ms, r.fire.state, r.fire.reason) for r in fired] == [
        *((ms(f"2026-01-01T0{h}:00"), FireState.SKIPPED, "missed") for h in range(1, 5)),
        (ms("2026-01-01T05:00"), FireState.LAUNCHING, None),
    ]
    assert state.next_fire_ms == ms("2026-01-01T06:00")


def test_a_long_outage_records_a_bounded_number_of_missed_slots() -> None:
    """Thirty days down: 96 missed records, the newest slot fires, the rest are omitted."""
    state = core(now=ms("2026-01-01T00:10"))
    _, actions = step(state, Tick(), ms("2026-01-31T00:10"))
    assert len(records(actions)) == 97
    assert isinstance(actions[0], SlotsOmitted)


def test_a_slot_meeting_an_unsettled_fire_is_skipped_overlap() -> None:
    """The previous fire's first turn still runs: the next slot is skipped, overlap."""
    state = core(now=ms("2026-01-01T00:10"))
    state, _ = step(state, Tick(), ms("2026-01-01T01:00"))
    first = state.fires[0].fire_id
    state, _ = step(state, Launched(first, "session_1", "turn_1"), ms("2026-01-01T01:00"))
    state, actions = step(state, Tick(), ms("2026-01-01T02:00"))
    (record,) = records(actions)
    assert (record.fire.state, record.fire.reason) == (FireState.SKIPPED, "overlap")
    state, _ = step(state, TurnSettled(first), ms("2026-01-01T02:10"))
    state, actions = step(state, Tick(), ms("2026-01-01T03:00"))
    assert records(actions)[0].fire.state is FireState.LAUNCHING


def test_held_fails_the_slot_with_reason_held() -> None:
    """A hold at the claim records the slot failed, held; nextFireAt still moves."""
    state = core(now=ms("2026-01-01T00:10"))
    state, actions = step(state, Tick(held=True), ms("2026-01-01T01:00"))
    assert [r.fire.state for r in records(actions)] == [FireState.LAUNCHING, FireState.FAILED]
    assert records(actions)[-1].fire.reason == "held"
    assert state.fires == ()
    assert state.next_fire_ms == ms("2026-01-01T02:00")


def test_manual_run_is_judged_at_record_and_again_at_claim() -> None:
    """A run records an unclaimed launching fire; the next tick claims it; a second run is
    routine_busy; a run never moves nextFireAt."""
    state = core(now=ms("2026-01-01T00:10"))
    now = ms("2026-01-01T00:20")
    state, actions = step(state, Run("fire_manual", 1), now)
    (record,) = records(actions)
    assert (record.fire.trigger, record.fire.claimed_ms, record.fire.scheduled_ms) == (
        Trigger.MANUAL, None, now,
    )  # fmt: skip
    assert state.next_fire_ms == ms("2026-01-01T01:00")
    with pytest.raises(MaiaError) as caught:
        step(state, Run("fire_other", 1), now)
    assert (caught.value.code, caught.value.retryable) == ("routine_busy", True)
    state, actions = step(state, Tick(), now + 1000)
    assert records(actions)[0].event is FireEvent.ADMIT
    assert state.fires[0].claimed_ms == now + 1000


def test_cron_slot_is_judged_first_and_meets_the_manual_fire() -> None:
    """A slot due in the tick that claims a manual fire is skipped overlap; the run goes on."""
    state = core(now=ms("2026-01-01T00:10"))
    state, _ = step(state, Run("fire_manual", 1), ms("2026-01-01T00:59"))
    state, actions = step(state, Tick(), ms("2026-01-01T01:00"))
    assert [(r.fire.fire_id == "fire_manual", r.fire.state.value, r.fire.reason)
            for r in records(actions)] == [(False, "skipped", "overlap"),
                                           (True, "launching", None)]  # fmt: skip


@pytest.mark.parametrize(
    ("change", "reason"), [(Pause(1), "routine_not_active"), (Disable(1), "routine_not_active")]
)
def test_an_unclaimed_manual_fire_of_a_routine_no_longer_active_fails(
    change: Pause | Disable, reason: str
) -> None:
    """Paused or disabled before the claim: the claim fails the run, routine_not_active."""
    state = core(now=ms("2026-01-01T00:10"))
    state, _ = step(state, Run("fire_manual", 1), ms("2026-01-01T00:20"))
    state, _ = step(state, change, ms("2026-01-01T00:21"))
    state, actions = step(state, Tick(), ms("2026-01-01T00:22"))
    (record,) = records(actions)
    assert (record.fire.state, record.fire.reason) == (FireState.FAILED, reason)


def test_run_refusals_change_nothing() -> None:
    """Not active, held, or a stale revision: refused with the spec's code, state unchanged."""
    paused = core(state=RoutineState.PAUSED, next_fire_ms=None)
    for state, event, code in [
        (paused, Run("f", 1), "routine_not_active"),
        (core(), Run("f", 1, held=True), "held"),
        (core(), Run("f", 7), "storage_conflict"),
    ]:
        with pytest.raises(MaiaError) as caught:
            step(state, event, 0)
        assert caught.value.code == code


def test_pause_resume_disable_compare_and_set_the_revision() -> None:
    """Each change needs the current revision and bumps it; resume never replays the past;
    a disabled routine takes no change (storage_conflict)."""
    state = core(now=ms("2026-01-01T00:10"))
    with pytest.raises(MaiaError) as caught:
        step(state, Pause(2), 0)
    assert caught.value.code == "storage_conflict"
    assert caught.value.details["path"] == "expectedRevision"  # the field to correct
    state, _ = step(state, Pause(1), ms("2026-01-01T00:20"))
    assert (state.state, state.revision, state.next_fire_ms) == (RoutineState.PAUSED, 2, None)
    state, _ = step(state, Resume(2), ms("2026-01-01T05:30"))
    assert (state.revision, state.next_fire_ms) == (3, ms("2026-01-01T06:00"))
    state, _ = step(state, Disable(3), ms("2026-01-01T05:31"))
    for event in (Resume(4), Pause(4), Disable(4)):
        with pytest.raises(MaiaError) as caught:
            step(state, event, 0)
        assert caught.value.code == "storage_conflict"


def test_saturated_retries_until_ten_minutes_after_the_claim() -> None:
    """Saturated stays launching until the deadline, then fails with reason saturated."""
    claim = ms("2026-01-01T01:00")
    state, _ = step(core(now=claim - 1), Tick(), claim)
    fire_id = state.fires[0].fire_id
    state, actions = step(state, LaunchRefused(fire_id, FailReason.SATURATED), claim + 60_000)
    assert records(actions)[0].fire.state is FireState.LAUNCHING
    assert state.fires[0].attempts == 1
    late = claim + SATURATION_DEADLINE_MS
    state, actions = step(state, LaunchRefused(fire_id, FailReason.SATURATED), late)
    assert (records(actions)[0].fire.state, records(actions)[0].fire.reason) == (
        FireState.FAILED, "saturated",
    )  # fmt: skip


def test_recovery_starts_only_from_the_schedulers_receipt() -> None:
    """After a crash: attached + receipt → started; anything else claimed → outcome_unknown;
    an unclaimed manual fire survives."""
    state, _ = step(core(cron="0 * * * *", now=0), Tick(), HOUR)
    with_receipt = state.fires[0].fire_id
    state, _ = step(state, Attached(with_receipt, "session_1"), HOUR)
    other = core(routine_id="routine_" + "b" * 32, now=0)
    other, _ = step(other, Tick(), HOUR)
    other, _ = step(other, Attached(other.fires[0].fire_id, "session_2"), HOUR)
    manual = core(routine_id="routine_" + "c" * 32, now=0)
    manual, _ = step(manual, Run("fire_manual", 1), HOUR - 5)
    receipts = {with_receipt: "turn_1"}
    state, actions = step(state, Recover(receipts), 2 * HOUR)
    assert records(actions)[0].fire.state is FireState.STARTED
    assert records(actions)[0].fire.turn_id == "turn_1"
    other, actions = step(other, Recover(receipts), 2 * HOUR)
    assert records(actions)[0].fire.reason == "outcome_unknown"
    manual, actions = step(manual, Recover(receipts), 2 * HOUR)
    assert actions == ()
    assert manual.fires[0].claimed_ms is None


def test_launch_budget_takes_fresh_claims_first() -> None:
    """100 fresh claims and 10 retries: 32 fresh a tick, so all start in ceil(100/32) ticks;
    a retry past its deadline expires without an attempt."""
    fresh = [Candidate(f"r{i}", f"f{i}", 1000 + i, 0) for i in range(100)]
    retries = [Candidate(f"s{i}", f"g{i}", 500, 1) for i in range(10)]
    stale = Candidate("old", "gold", 0, 3)
    pending = [*retries, *fresh, stale]
    ticks = 0
    now = SATURATION_DEADLINE_MS
    while any(c.attempts == 0 for c in pending):
        plan = plan_launches(pending, now)
        assert len(plan.launch) <= MAX_LAUNCHES_PER_TICK
        assert plan.expire == ((stale,) if stale in pending else ())
        pending = [c for c in pending if c not in plan.launch and c not in plan.expire]
        ticks += 1
    assert ticks == math.ceil(100 / MAX_LAUNCHES_PER_TICK)


def run_weeks(cron: str, zone: str, start: str, end: str, tick_every_ms: int) -> list[int]:
    """Tick a routine every `tick_every_ms` of virtual time; each fire runs instantly."""
    state = core(cron, zone, now=ms(start))
    claimed: list[int] = []
    for now in range(ms(start), ms(end), tick_every_ms):
        state, actions = step(state, Tick(), now)
        claimed += [r.fire.scheduled_ms for r in records(actions) if r.event is FireEvent.CLAIM]
        state = settle_all(state, now)
    return claimed


@pytest.mark.parametrize(
    ("zone", "start", "end"),
    [
        (NY, "2026-02-22T00:00", "2026-03-22T00:00"),
        (NY, "2026-10-18T00:00", "2026-11-15T00:00"),
        (BERLIN, "2026-03-15T00:00", "2026-04-12T00:00"),
        (BERLIN, "2026-10-11T00:00", "2026-11-08T00:00"),
    ],
)
@pytest.mark.parametrize(("hour", "minute"), [(2, 30), (1, 30), (2, 0)])
def test_four_weeks_of_fixed_time_fires_match_the_table(
    zone: str, start: str, end: str, hour: int, minute: int
) -> None:
    """Ticked every minute for four weeks over a DST night, a daily routine claims exactly
    the slots the independent table lists."""
    got = run_weeks(f"{minute} {hour} * * *", zone, start, end, MINUTE)
    assert got == expected_fixed(zone, hour, minute, ms(start) + MINUTE, ms(end))


@pytest.mark.parametrize(
    ("zone", "start", "end"),
    [
        (NY, "2026-03-05T00:00", "2026-03-12T00:00"),
        (BERLIN, "2026-10-22T00:00", "2026-10-29T00:00"),
    ],
)
def test_a_week_of_hourly_fires_matches_the_table(zone: str, start: str, end: str) -> None:
    """`30 * * * *` over a DST week claims each wall-clock occurrence, no more, no less."""
    got = run_weeks("30 * * * *", zone, start, end, 5 * MINUTE)
    assert got == expected_hourly(zone, 30, ms(start), ms(end))
