"""Routines and fires as the wire carries them (maia.protocol's Routine and RoutineFire)."""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Callable, Sequence
from typing import Any

from maia.core import format_timestamp_ms
from maia.protocol import (
    FireFailure,
    Routine,
    RoutineFire,
    RoutineSchedule,
    RoutineTemplate,
    to_json,
)

from ._sql import FireRow, RoutineRow, newest_fires, require_routine


def routine_id_for(actor_id: str, command_id: str) -> str:
    """A routine's ID derives from the actor and the create commandId (spec), so a retried
    create names the same routine."""
    return "routine_" + hashlib.sha256(f"{actor_id}\0{command_id}".encode()).hexdigest()[:32]


def routine_view(row: RoutineRow) -> Routine:
    return Routine(
        routine_id=row.routine_id,
        name=row.name,
        state=row.state.value,
        revision=row.revision,
        schedule=RoutineSchedule(cron=row.cron, timezone=row.timezone),
        template=RoutineTemplate(
            project_id=row.project_id, prompt=row.prompt, executor=row.executor
        ),
        created_at=format_timestamp_ms(row.created_ms),
        updated_at=format_timestamp_ms(row.updated_ms),
        next_fire_at=None if row.next_fire_ms is None else format_timestamp_ms(row.next_fire_ms),
    )


# The runtime failures of routine.show's fires, read at once: (fire, its first turn's state,
# that turn's failure reason) each, one failure or None each, in order.
FailuresOf = Callable[
    [sqlite3.Connection, Sequence[tuple[FireRow, str | None, str | None]]],
    Sequence[FireFailure | None],
]


def fire_view(fire: FireRow, turn_state: str | None = None, failure_reason: str | None = None,
              failure: FireFailure | None = None) -> RoutineFire:  # fmt: skip
    """A fire; a started one carries its first turn's state, and when that turn failed its
    failureReason and `failure` (by default the reason with a stock message). A `failure`
    without a failed turn (its Session failed before any turn) comes without failureReason."""
    failed = turn_state == "failed" and failure_reason is not None
    if failed and failure is None:
        assert failure_reason is not None
        failure = FireFailure(code=failure_reason, message=_message(failure_reason))
    return RoutineFire(
        fire_id=fire.fire_id,
        routine_id=fire.routine_id,
        trigger_kind=fire.trigger.value,
        scheduled_at=format_timestamp_ms(fire.scheduled_ms),
        state=fire.state.value,  # type: ignore[arg-type]
        created_at=format_timestamp_ms(fire.created_ms),
        updated_at=format_timestamp_ms(fire.updated_ms),
        reason=fire.reason,  # type: ignore[arg-type]
        session_id=fire.session_id,
        turn_id=fire.turn_id,
        turn_state=turn_state,  # type: ignore[arg-type]
        failure_reason=failure_reason if failed else None,
        failure=failure,
    )


def _message(reason: str) -> str:
    return {
        "runtime_lost": "the worker or the Node died while the turn ran",
        "turn_rejected": "the turn was cancelled or its Session stopped before it ran",
    }.get(reason, reason.replace("_", " "))


def routine_show(conn: sqlite3.Connection, routine_id: str,
                 failures_of: FailuresOf | None = None) -> dict[str, Any]:  # fmt: skip
    """routine.show's answer as JSON values; `failures_of(conn, fires)` gives the fires'
    runtime failures as turn.show or session.show carry them (the Session kind's tables: the
    service layer passes it, one read for the page), None for none or the default.
    Raises `resource_not_found`."""
    row = require_routine(conn, routine_id)
    shown = [(fire, state, reason) for fire, (state, reason) in newest_fires(conn, routine_id)]
    failures = [None] * len(shown) if failures_of is None else failures_of(conn, shown)
    fires = [fire_view(fire, state, reason, failure)
             for (fire, state, reason), failure in zip(shown, failures, strict=True)]  # fmt: skip
    return {"routine": to_json(routine_view(row)), "fires": [to_json(f) for f in fires]}
