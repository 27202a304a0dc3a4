"""A Session's `status` (spec: Session wait operation, E13): the derived view a person or a
bot acts on, from the lifecycle state (the source of truth) and the announced activity.

A state with a status of its own decides it (`waiting-approval` reads `approval`); a live
state defers to the activity (an idle Session with turns waiting for an activation is `working`).
Every change is announced as `session.status.changed` in the transaction that made it.
"""

from __future__ import annotations

from typing import Final

BY_STATE: Final[dict[str, str | None]] = {
    "idle": None,
    "starting": "starting",
    "running": None,
    "waiting-approval": "approval",
    "interrupted": None,
    "recovering": "starting",
    "stopping": "ended",
    "stopped": "ended",
    "failed": "error",
}
BY_ACTIVITY: Final[dict[str, str]] = {
    "working": "working",
    "waiting_approval": "approval",
    "idle": "idle",
    "stopped": "idle",
}


def status_of(state: str, activity: str) -> str:
    """The status a Session in `state` with `activity` reads; `unknown` for neither known."""
    chosen = BY_STATE.get(state)
    return chosen if chosen is not None else BY_ACTIVITY.get(activity, "unknown")
