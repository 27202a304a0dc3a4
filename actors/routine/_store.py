"""Applying one core event to one routine inside ONE storage transaction.

`apply_event(conn, routine_id, event, now_ms, actor_id)` reads the routine and its unsettled
fires, asks the pure core, and writes every action it returns (fire rows, the routine's
state and nextFireAt, Session attachments) with one journal event per change, owned by the
routine (gap-free sequence, domain `scheduler` on the observation stream). It runs in the
storage writer, so it is serialized with every other write: the read and the write see the
same state, and a claim cannot race a pause. A refusal raises before anything is written.
"""

from __future__ import annotations

import sqlite3
from typing import Any

import attrs

from maia.core import format_timestamp_ms
from storage import EventRecord, append_event

from ._core import (
    AttachSession,
    Core,
    Event,
    Fire,
    RecordFire,
    SetRoutine,
    SlotsOmitted,
    Tick,
    step,
)
from ._sql import RoutineRow, attach_session, load_core, set_routine, write_fire


@attrs.frozen
class Applied:
    """What one event did: the routine and core after it, the fires it wrote, its events."""

    routine: RoutineRow
    core: Core
    fires: tuple[Fire, ...]
    event_ids: tuple[str, ...]


def fire_payload(fire: Fire) -> dict[str, Any]:
    payload: dict[str, Any] = {
        "fireId": fire.fire_id,
        "triggerKind": fire.trigger.value,
        "scheduledAt": format_timestamp_ms(fire.scheduled_ms),
        "state": fire.state.value,
    }
    for key, value in (("reason", fire.reason), ("sessionId", fire.session_id),
                       ("turnId", fire.turn_id)):  # fmt: skip
        if value is not None:
            payload[key] = value
    return payload


def apply_event(
    conn: sqlite3.Connection,
    routine_id: str,
    event: Event,
    now_ms: int,
    actor_id: str,
    *,
    catch_up: bool = False,
) -> Applied:
    """Step the routine's core with `event` and write what it decided, in this transaction.

    With `catch_up`, a `Tick` first claims whatever is due (a pause or disable applies after
    the slots due before it). Raises the core's refusals (`storage_conflict`,
    `routine_not_active`, `routine_busy`, ...) and `resource_not_found`.
    """
    row, core = load_core(conn, routine_id)
    written: list[Fire] = []
    events: list[EventRecord] = []
    if catch_up and not isinstance(event, Tick):
        core, row = _write(conn, row, core, Tick(), now_ms, actor_id, written, events)
    core, row = _write(conn, row, core, event, now_ms, actor_id, written, events)
    return Applied(row, core, tuple(written), tuple(e.event_id for e in events))


def _write(
    conn: sqlite3.Connection,
    row: RoutineRow,
    core: Core,
    event: Event,
    now_ms: int,
    actor_id: str,
    written: list[Fire],
    events: list[EventRecord],
) -> tuple[Core, RoutineRow]:
    after, actions = step(core, event, now_ms)

    def journal(event_type: str, payload: dict[str, Any], session_id: str | None = None) -> None:
        events.append(append_event(
            conn, owner_id=row.routine_id, owner_type="routine", event_type=event_type,
            payload=payload, now_ms=now_ms, aggregate_revision=after.revision,
            project_id=row.project_id, session_id=session_id, actor_id=actor_id,
        ))  # fmt: skip

    for action in actions:
        match action:
            case RecordFire(fire=fire, emits=emits):
                write_fire(conn, row.routine_id, fire, now_ms)
                written.append(fire)
                journal(emits, fire_payload(fire), fire.session_id)
            case SetRoutine(state=state, revision=revision, next_fire_ms=next_fire, emits=emits):
                claim = revision == core.revision  # a claim keeps the revision: CAS the slot
                set_routine(
                    conn, row.routine_id, state=state, revision=revision,
                    next_fire_ms=next_fire, now_ms=now_ms, expected_revision=core.revision,
                    expected_next_fire_ms=core.next_fire_ms, check_next_fire=claim,
                )  # fmt: skip
                row = attrs.evolve(row, state=state, revision=revision, next_fire_ms=next_fire,
                                   updated_ms=now_ms)  # fmt: skip
                payload: dict[str, Any] = {"state": state.value, "revision": revision}
                if next_fire is not None:
                    payload["nextFireAt"] = format_timestamp_ms(next_fire)
                journal(emits, payload)
            case AttachSession(fire_id=fire_id, session_id=session_id):
                attach_session(conn, fire_id, session_id, now_ms)
                journal("routine.fire_attached", {"fireId": fire_id, "sessionId": session_id},
                        session_id)  # fmt: skip
            case SlotsOmitted(before_ms=before):
                journal("routine.slots_omitted", {"before": format_timestamp_ms(before)})
    return after, row
