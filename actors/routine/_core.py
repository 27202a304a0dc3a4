"""One routine's scheduling, as a pure function: `step(core, event, now) -> (core, actions)`.

It decides and performs nothing: the actor writes the returned actions in ONE storage
transaction (so claiming a slot and advancing `nextFireAt` commit together and a slot fires
at most once, across restarts), then feeds back what the launches answered. Every change of
a fire goes through `FIRE_TABLE`, every change of the routine through `ROUTINE_TABLE`.

The rules (spec: Scheduled Session operations; Maia's additions marked):
  * a claim takes the newest due slot; the slots it passes over are recorded `skipped`
    with reason `missed` (Maia), at most `MAX_MISSED_RECORDS` of them;
  * the due cron slot is judged first: it meets an unsettled fire (launching, or started
    with its first turn not finished) → `skipped`/`overlap`; a hold → `failed`/`held`;
    otherwise `launching`, claimed now; `nextFireAt` moves to the first slot after now;
  * an unclaimed manual fire is then judged again: not active → `routine_not_active`,
    a hold → `held`; otherwise claimed. A manual fire never moves `nextFireAt`;
  * a saturated launch stays `launching` and is retried until 10 minutes after its claim,
    then fails `saturated`; the scheduler's launch budget is `plan_launches`;
  * after a crash a claimed `launching` fire becomes `started` only from the scheduler's
    own turn.send receipt on the Session the fire attached, else `failed`/`outcome_unknown`;
    an unclaimed manual fire survives for the next tick.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

import attrs

from maia.core import MaiaError

from ._events import (
    Action,
    Attached,
    AttachSession,
    Disable,
    Event,
    Launched,
    LaunchRefused,
    Pause,
    RecordFire,
    Recover,
    Resume,
    Run,
    SetRoutine,
    SlotsOmitted,
    Tick,
    TurnSettled,
)
from ._model import Core, Fire, Trigger, cron_fire_id
from ._table import (
    CLIENT,
    FIRE_TABLE,
    ROUTINE_TABLE,
    SATURATION_DEADLINE_MS,
    SCHEDULER,
    FailReason,
    FireEvent,
    FireState,
    RoutineEvent,
    RoutineState,
    SkipReason,
)

MAX_MISSED_RECORDS: Final = 96  # a day of 15-minute slots


def _fire_step(
    fire: Fire, event: FireEvent, caller: str = SCHEDULER, **changes: object
) -> tuple[Fire, RecordFire]:
    found = FIRE_TABLE.step(fire.state, event, caller=caller, aggregate_id=fire.fire_id)
    moved = attrs.evolve(fire, state=found.target, **changes)  # type: ignore[arg-type]
    assert found.emits is not None
    return moved, RecordFire(moved, event, found.emits)


def _routine_step(core: Core, event: RoutineEvent, expected: int | None, caller: str) -> str:
    """The routine row for `event`; a stale `expected` revision is `storage_conflict` (the
    spec's code, where the generic table would answer revision_conflict)."""
    if expected is not None and expected != core.revision:
        raise MaiaError(
            "storage_conflict",
            f"routine {core.routine_id} is at revision {core.revision}, not {expected}",
            {
                "routineId": core.routine_id,
                "actual": core.revision,
                "expected": expected,
                "path": "expectedRevision",
            },
        )
    found = ROUTINE_TABLE.step(
        core.state, event, caller=caller, aggregate_id=core.routine_id,
        expected_revision=expected, revision=expected,
    )  # fmt: skip
    assert found.emits is not None
    return found.emits


def _keep(fires: Sequence[Fire]) -> tuple[Fire, ...]:
    return tuple(f for f in fires if f.unsettled)


def step(core: Core, event: Event, now: int) -> tuple[Core, tuple[Action, ...]]:
    """Apply `event` at wall time `now` (ms). Pure.

    Raises `MaiaError` and changes nothing when the event does not apply: `storage_conflict`
    (stale `expectedRevision`, or a pause/resume/disable the state refuses),
    `routine_not_active`, `routine_busy` and `held` for a run, `invalid_state` for a
    launch answer about a fire that is not launching.
    """
    match event:
        case Tick(held=held, manual=manual):
            return _tick(core, now, held, manual)
        case Pause(expected_revision=expected):
            emits = _routine_step(core, RoutineEvent.PAUSE, expected, CLIENT)
            return _set(core, RoutineState.PAUSED, None, emits)
        case Resume(expected_revision=expected):
            emits = _routine_step(core, RoutineEvent.RESUME, expected, CLIENT)
            return _set(core, RoutineState.ACTIVE, core.schedule.next_after(now), emits)
        case Disable(expected_revision=expected):
            emits = _routine_step(core, RoutineEvent.DISABLE, expected, CLIENT)
            return _set(core, RoutineState.DISABLED, None, emits)
        case Run():
            return _run(core, event, now)
        case Attached(fire_id=fire_id, session_id=session_id):
            fire = _launching(core, fire_id)
            moved = attrs.evolve(fire, session_id=session_id)
            return _replace(core, moved), (AttachSession(fire_id, session_id),)
        case Launched(fire_id=fire_id, session_id=session_id, turn_id=turn_id):
            fire, record = _fire_step(_launching(core, fire_id), FireEvent.LAUNCHED,
                                      session_id=session_id, turn_id=turn_id)  # fmt: skip
            return _replace(core, fire), (record,)
        case LaunchRefused(fire_id=fire_id, reason=reason):
            return _refused(core, _launching(core, fire_id), reason, now)
        case TurnSettled(fire_id=fire_id):
            return attrs.evolve(
                core, fires=tuple(f for f in core.fires if f.fire_id != fire_id)
            ), ()
        case Recover(receipts=receipts):
            return _recover(core, receipts)
    raise AssertionError(f"unknown event {event!r}")  # pragma: no cover


def _set(
    core: Core, state: RoutineState, next_fire_ms: int | None, emits: str
) -> tuple[Core, tuple[Action, ...]]:
    moved = attrs.evolve(core, state=state, revision=core.revision + 1, next_fire_ms=next_fire_ms)
    return moved, (SetRoutine(state, moved.revision, next_fire_ms, emits),)


def _replace(core: Core, fire: Fire) -> Core:
    fires = [fire if f.fire_id == fire.fire_id else f for f in core.fires]
    if all(f.fire_id != fire.fire_id for f in core.fires):
        fires.append(fire)
    return attrs.evolve(core, fires=_keep(fires))


def _launching(core: Core, fire_id: str) -> Fire:
    fire = core.fire(fire_id)
    if fire is None or fire.state is not FireState.LAUNCHING:
        raise MaiaError(
            "invalid_state",
            f"routine_fire {fire_id} is not launching",
            {"resource": "routine_fire", "id": fire_id, "state": "settled"},
        )
    return fire


def _busy(core: Core) -> MaiaError:
    return MaiaError(
        "routine_busy",
        f"routine {core.routine_id} is busy: the previous fire's first turn is unsettled",
        {"routineId": core.routine_id},
    )


def held_error(routine_id: str) -> MaiaError:
    return MaiaError(
        "held",
        f"admission is held: routine {routine_id} cannot run now",
        {"detail": "admission is held", "routineId": routine_id},
    )


def judge_run(core: Core, held: bool) -> None:
    """Refuse a manual run (preview or confirm) that cannot be recorded now.

    Raises `routine_not_active`, `held`, or `routine_busy` (retryable) while a fire is
    unsettled. Records nothing.
    """
    if core.state is not RoutineState.ACTIVE:
        raise MaiaError(
            "routine_not_active",
            f"routine {core.routine_id} is {core.state.value}: only an active routine runs",
            {"routineId": core.routine_id, "state": core.state.value},
        )
    if held:
        raise held_error(core.routine_id)
    if core.busy:
        raise _busy(core)


def _run(core: Core, run: Run, now: int) -> tuple[Core, tuple[Action, ...]]:
    judge_run(core, run.held)
    _routine_step(core, RoutineEvent.RUN, run.expected_revision, CLIENT)
    due = Fire(run.fire_id, Trigger.MANUAL, now, state=FireState.DUE)
    fire, record = _fire_step(due, FireEvent.RUN, CLIENT)
    return _replace(core, fire), (record,)


def _tick(core: Core, now: int, held: bool, manual: bool) -> tuple[Core, tuple[Action, ...]]:
    actions: list[Action] = []
    fires = list(core.fires)
    next_fire = core.next_fire_ms
    if core.state is RoutineState.ACTIVE and next_fire is not None and next_fire <= now:
        _routine_step(core, RoutineEvent.CLAIM, None, SCHEDULER)
        missed = core.schedule.missed_between(next_fire - 1, now, MAX_MISSED_RECORDS + 1)
        *passed, due_ms = missed.slots or (next_fire,)
        if missed.omitted:
            actions.append(SlotsOmitted(passed[0] if passed else due_ms))
        for slot in passed:
            skipped = Fire(cron_fire_id(core.routine_id, slot), Trigger.CRON, slot,
                           state=FireState.DUE, reason=SkipReason.MISSED.value)  # fmt: skip
            actions.append(_fire_step(skipped, FireEvent.PASS_OVER)[1])
        due = Fire(cron_fire_id(core.routine_id, due_ms), Trigger.CRON, due_ms,
                   state=FireState.DUE)  # fmt: skip
        if any(f.unsettled for f in fires):
            fire, record = _fire_step(due, FireEvent.OVERLAP, reason=SkipReason.OVERLAP.value)
        elif held:
            fire, record = _fire_step(due, FireEvent.CLAIM, claimed_ms=now)
            actions.append(record)
            fire, record = _fire_step(fire, FireEvent.REFUSE, reason=FailReason.HELD.value)
        else:
            fire, record = _fire_step(due, FireEvent.CLAIM, claimed_ms=now)
        actions.append(record)
        fires.append(fire)
        next_fire = core.schedule.next_after(now)
        actions.append(SetRoutine(core.state, core.revision, next_fire, "routine.slot_claimed"))
    for index, fire in enumerate(fires):
        if not manual or fire.trigger is not Trigger.MANUAL or fire.claimed_ms is not None:
            continue
        if fire.state is not FireState.LAUNCHING:
            continue
        if core.state is not RoutineState.ACTIVE or held:
            reason = (
                FailReason.HELD
                if core.state is RoutineState.ACTIVE
                else (FailReason.ROUTINE_NOT_ACTIVE)
            )
            fires[index], record = _fire_step(fire, FireEvent.REFUSE, reason=reason.value)
        else:
            fires[index], record = _fire_step(fire, FireEvent.ADMIT, claimed_ms=now)
        actions.append(record)
    return attrs.evolve(core, next_fire_ms=next_fire, fires=_keep(fires)), tuple(actions)


def _refused(
    core: Core, fire: Fire, reason: FailReason, now: int
) -> tuple[Core, tuple[Action, ...]]:
    if reason is FailReason.SATURATED:
        claimed = fire.claimed_ms if fire.claimed_ms is not None else now
        if now < claimed + SATURATION_DEADLINE_MS:
            moved, record = _fire_step(fire, FireEvent.SATURATED, attempts=fire.attempts + 1)
            return _replace(core, moved), (record,)
        moved, record = _fire_step(fire, FireEvent.SATURATION_EXPIRED, reason=reason.value)
        return _replace(core, moved), (record,)
    moved, record = _fire_step(fire, FireEvent.LAUNCH_FAILED, reason=reason.value)
    return _replace(core, moved), (record,)


def _recover(core: Core, receipts: Mapping[str, str]) -> tuple[Core, tuple[Action, ...]]:
    fires: list[Fire] = []
    actions: list[Action] = []
    for fire in core.fires:
        if fire.state is not FireState.LAUNCHING or fire.claimed_ms is None:
            fires.append(fire)  # a started fire, or a manual fire no tick has claimed
            continue
        turn_id = receipts.get(fire.fire_id)
        if turn_id is not None and fire.session_id is not None:
            moved, record = _fire_step(fire, FireEvent.RECOVERED, turn_id=turn_id)
        else:
            moved, record = _fire_step(fire, FireEvent.OUTCOME_UNKNOWN,
                                       reason=FailReason.OUTCOME_UNKNOWN.value)  # fmt: skip
        fires.append(moved)
        actions.append(record)
    return attrs.evolve(core, fires=_keep(fires)), tuple(actions)
