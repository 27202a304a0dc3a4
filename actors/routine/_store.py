"""Planning a core event and writing what it decided, in the routine actor's one write.

`plan(core, event, now)` is pure (the actor runs it before it writes); `persist(conn, ...)`
runs inside the write path's transaction and writes every action (fire rows, the routine's
state and nextFireAt by compare-and-set, Session attachments) with one journal event per
change, owned by the routine (gap-free sequence; domain `scheduler` on the observation
stream). A refusal raises before anything is written; a routine that moved underneath its
actor fails `storage_conflict` and the whole write rolls back.
"""

from __future__ import annotations

import sqlite3
from typing import Any

import attrs

from maia.core import format_timestamp_ms
from storage import EventRecord, append_event

from ._core import step
from ._events import Action, AttachSession, Event, RecordFire, SetRoutine, SlotsOmitted, Tick
from ._model import Core, Fire
from ._sql import RoutineRow, attach_session, set_routine, write_fire


@attrs.frozen
class Planned:
    """One core step: the core before and after it, and what it decided."""

    before: Core
    after: Core
    actions: tuple[Action, ...]


def plan(core: Core, event: Event, now_ms: int, *, catch_up: bool = False) -> tuple[Planned, ...]:
    """Step the core (pure). With `catch_up`, a cron-only `Tick` first claims the slots due
    before the change (a pause applies after them). Raises the core's refusals."""
    steps: list[Planned] = []
    if catch_up and not isinstance(event, Tick):
        after, actions = step(core, Tick(manual=False), now_ms)
        steps.append(Planned(core, after, actions))
        core = after
    after, actions = step(core, event, now_ms)
    steps.append(Planned(core, after, actions))
    return tuple(steps)


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


def persist(
    conn: sqlite3.Connection,
    row: RoutineRow,
    steps: tuple[Planned, ...],
    now_ms: int,
    actor_id: str,
) -> tuple[str, ...]:
    """Write planned steps in this transaction; the IDs of the events appended. Raises
    `storage_conflict` when the routine moved since it was read (compare-and-set)."""
    events: list[EventRecord] = []
    for planned in steps:
        row = _write(conn, row, planned, now_ms, actor_id, events)
    return tuple(e.event_id for e in events)


def _write(
    conn: sqlite3.Connection,
    row: RoutineRow,
    planned: Planned,
    now_ms: int,
    actor_id: str,
    events: list[EventRecord],
) -> RoutineRow:
    core, after, actions = planned.before, planned.after, planned.actions

    def journal(event_type: str, payload: dict[str, Any], session_id: str | None = None,
                correlation_id: str | None = None) -> None:  # fmt: skip
        events.append(append_event(
            conn, owner_id=row.routine_id, owner_type="routine", event_type=event_type,
            payload=payload, now_ms=now_ms, aggregate_revision=after.revision,
            project_id=row.project_id, session_id=session_id, actor_id=actor_id,
            correlation_id=correlation_id,
        ))  # fmt: skip

    for action in actions:
        match action:
            case RecordFire(fire=fire, emits=emits):
                write_fire(conn, row.routine_id, fire, now_ms)
                # a fire correlates what it launches: its Session, turn and their events
                journal(emits, fire_payload(fire), fire.session_id, fire.fire_id)
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
                        session_id, fire_id)  # fmt: skip
            case SlotsOmitted(before_ms=before):
                journal("routine.slots_omitted", {"before": format_timestamp_ms(before)})
    return row
