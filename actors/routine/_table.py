"""The routine and routine-fire lifecycles, as transition tables (spec: Scheduled Session
operations). The pure core (`_core.py`) asks these tables before every change; a missing
`(state, event)` pair is the refusal.

Routine: `active`, `paused`, `disabled` (final). Choices where the spec is silent
(docs/routines.md):
  * a routine is created `active`, or `paused` with `paused: true`; creation is its own
    receipt-bearing insert, so the table starts at `active` and reaches `paused` by a row;
  * pause, resume and disable take `expectedRevision` (compare-and-set) and bump the
    revision; claims and manual runs do not (a tick must not invalidate a revision a person
    just read), they move `nextFireAt` or add a fire;
  * pause of a routine that is not active, resume of one that is not paused, and any change
    of a disabled routine answer `storage_conflict` (what the caller expected is not what is
    stored); a run of a routine that is not active answers `routine_not_active`.

Fire: a slot has no row until it is recorded (`due`); then `launching`, and finally
`started`, `failed` (with a reason) or `skipped` (overlap, or missed while the Node was down).
`launching` is left by the launch's answer, by the saturation deadline, or after a crash by
the recovery rule (started only from the scheduler's own turn.send receipt, otherwise failed
`outcome_unknown`), which `_core.recover` applies through the rows below.
"""

from __future__ import annotations

import enum
from typing import Final

from actors._table import Transition, TransitionTable, row

CLIENT: Final = "client"  # an API request (the local user)
SCHEDULER: Final = "scheduler"  # the Node's automation, acting for one routine
SATURATION_DEADLINE_MS: Final = 10 * 60 * 1000  # a saturated launch retries this long


class RoutineState(enum.Enum):
    ACTIVE = "active"
    PAUSED = "paused"
    DISABLED = "disabled"


class RoutineEvent(enum.Enum):
    PAUSE = "routine.pause"
    RESUME = "routine.resume"
    DISABLE = "routine.disable.confirm"
    CLAIM = "routine.claim"  # the scheduler claims the due slot and advances nextFireAt
    RUN = "routine.run.confirm"  # a manual run records a launching fire


def _routine_rows() -> list[Transition[RoutineState, RoutineEvent]]:
    s, e = RoutineState, RoutineEvent
    return [
        row(s.ACTIVE, e.PAUSE, s.PAUSED, CLIENT, emits="routine.paused", receipt=True,
            expects_revision=True),
        row(s.PAUSED, e.RESUME, s.ACTIVE, CLIENT, emits="routine.resumed", receipt=True,
            expects_revision=True),
        row(s.ACTIVE, e.DISABLE, s.DISABLED, CLIENT, emits="routine.disabled", receipt=True,
            expects_revision=True),
        row(s.PAUSED, e.DISABLE, s.DISABLED, CLIENT, emits="routine.disabled", receipt=True,
            expects_revision=True),
        row(s.ACTIVE, e.CLAIM, s.ACTIVE, SCHEDULER, emits="routine.slot_claimed"),
        row(s.ACTIVE, e.RUN, s.ACTIVE, CLIENT, emits="routine.run_requested", receipt=True,
            expects_revision=True),
    ]  # fmt: skip


ROUTINE_TABLE: Final[TransitionTable[RoutineState, RoutineEvent]] = TransitionTable(
    "routine",
    states=RoutineState,
    events=RoutineEvent,
    initial=RoutineState.ACTIVE,
    terminal=(RoutineState.DISABLED,),
    rows=_routine_rows(),
    refusals={
        RoutineEvent.PAUSE: "storage_conflict",
        RoutineEvent.RESUME: "storage_conflict",
        RoutineEvent.DISABLE: "storage_conflict",
        RoutineEvent.CLAIM: "routine_not_active",
        RoutineEvent.RUN: "routine_not_active",
    },
)


class FireState(enum.Enum):
    DUE = "due"  # a slot (or a run) with no row yet; never stored
    LAUNCHING = "launching"
    STARTED = "started"
    FAILED = "failed"
    SKIPPED = "skipped"


class FireEvent(enum.Enum):
    CLAIM = "fire.claim"  # a cron slot claimed: launch it
    OVERLAP = "fire.overlap"  # a cron slot met an unsettled fire
    PASS_OVER = "fire.pass_over"  # a cron slot passed over by a late claim
    RUN = "fire.run"  # a manual run recorded, for the next tick to claim
    ADMIT = "fire.admit"  # the tick claims a manual fire (judged again)
    REFUSE = "fire.refuse"  # the claim's judgement refused it (not active, held, ...)
    LAUNCHED = "fire.launched"  # turn.send answered: the Session and first turn exist
    LAUNCH_FAILED = "fire.launch_failed"
    SATURATED = "fire.saturated"  # the Node is full: stay launching, retry next tick
    SATURATION_EXPIRED = "fire.saturation_expired"
    RECOVERED = "fire.recovered"  # after a crash: the scheduler's turn.send receipt exists
    OUTCOME_UNKNOWN = "fire.outcome_unknown"  # after a crash: no such receipt


class FailReason(enum.Enum):
    CONNECTION_DISABLED = "connection_disabled"
    HELD = "held"
    LAUNCH_FAILED = "launch_failed"
    OUTCOME_UNKNOWN = "outcome_unknown"
    ROUTINE_NOT_ACTIVE = "routine_not_active"
    SATURATED = "saturated"
    WORKSPACE_UNAVAILABLE = "workspace_unavailable"


class SkipReason(enum.Enum):
    OVERLAP = "overlap"
    MISSED = "missed"  # a Maia addition: passed over while the Node was down


def _fire_rows() -> list[Transition[FireState, FireEvent]]:
    f, e = FireState, FireEvent
    return [
        row(f.DUE, e.CLAIM, f.LAUNCHING, SCHEDULER, emits="routine.fire_launching"),
        row(f.DUE, e.OVERLAP, f.SKIPPED, SCHEDULER, emits="routine.fire_skipped"),
        row(f.DUE, e.PASS_OVER, f.SKIPPED, SCHEDULER, emits="routine.fire_skipped"),
        row(f.DUE, e.RUN, f.LAUNCHING, CLIENT, emits="routine.fire_requested", receipt=True),
        row(f.LAUNCHING, e.ADMIT, f.LAUNCHING, SCHEDULER, emits="routine.fire_launching"),
        row(f.LAUNCHING, e.REFUSE, f.FAILED, SCHEDULER, emits="routine.fire_failed"),
        row(f.LAUNCHING, e.LAUNCHED, f.STARTED, SCHEDULER, emits="routine.fire_started"),
        row(f.LAUNCHING, e.LAUNCH_FAILED, f.FAILED, SCHEDULER, emits="routine.fire_failed"),
        row(f.LAUNCHING, e.SATURATED, f.LAUNCHING, SCHEDULER, emits="routine.fire_saturated",
            timeout_ms=SATURATION_DEADLINE_MS, on_timeout=e.SATURATION_EXPIRED),
        row(f.LAUNCHING, e.SATURATION_EXPIRED, f.FAILED, SCHEDULER,
            emits="routine.fire_failed"),
        row(f.LAUNCHING, e.RECOVERED, f.STARTED, SCHEDULER, emits="routine.fire_started"),
        row(f.LAUNCHING, e.OUTCOME_UNKNOWN, f.FAILED, SCHEDULER, emits="routine.fire_failed"),
    ]  # fmt: skip


FIRE_TABLE: Final[TransitionTable[FireState, FireEvent]] = TransitionTable(
    "routine_fire",
    states=FireState,
    events=FireEvent,
    initial=FireState.DUE,
    terminal=(FireState.STARTED, FireState.FAILED, FireState.SKIPPED),
    rows=_fire_rows(),
)

ROUTINE_TABLES: Final = (ROUTINE_TABLE, FIRE_TABLE)
