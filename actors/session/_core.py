"""The Session's pure core: which table rows a fact means, decided by the tables.

The turn queue (`_queue`) says what happens next (a turn dispatched, a worker started or
let go, turns failed); this module turns those actions and the worker's facts (gone,
expected or not; a turn ended) into the Session and turn table events to apply, in order,
and the durable timers to arm. Where several rows could follow from a fact, the table
decides: the first candidate event the table accepts from the state reached is the one
(`first_accepted`), and each planned event's target is the table's, so the plan threads the
state the way the write will. It performs nothing; `_actor` applies a plan in one
transaction of the write path (`SessionStep`/`TurnStep`/`EndTurn` through `Tx.apply`,
`Arm` through `Tx.wake`).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from typing import Any, Final, TypeVar

import attrs

from actors._table import NODE, TransitionTable
from actors._timers import Wake

from . import _queue as q
from ._lifecycles import SESSION_TABLE, SessionEvent, SessionState, TurnEvent
from ._lifecycles import TurnState as TS
from ._messages import IDLE_RELEASE, WALL_TIME

S = TypeVar("S", bound=enum.Enum)
E = TypeVar("E", bound=enum.Enum)


@attrs.frozen
class SessionStep:
    event: SessionEvent


@attrs.frozen
class TurnStep:
    turn_id: str
    event: TurnEvent
    reason: str | None = None
    payload: Mapping[str, Any] = attrs.field(factory=dict)


@attrs.frozen
class EndTurn:
    """A dispatched turn ends as the worker (or its loss) says."""

    turn_id: str
    outcome: str  # completed | failed | interrupted | lost
    reason: str | None = None


@attrs.frozen
class Arm:
    wake: Wake


Step = SessionStep | TurnStep | EndTurn | Arm


def first_accepted(table: TransitionTable[S, E], state: S, candidates: Sequence[E]) -> E | None:
    """The first of `candidates` the table has a row for from `state` (None: no row)."""
    return next((e for e in candidates if table.get(state, e) is not None), None)


def _target(state: SessionState, event: SessionEvent) -> SessionState:
    """Where the Session table sends `state` on `event` (raises its refusal; the caller is
    checked when the step is applied)."""
    found = SESSION_TABLE.get(state, event)
    if found is None:
        SESSION_TABLE.step(state, event, caller=NODE)  # raises the table's refusal
        raise AssertionError("unreachable")
    return found.target


def plan_actions(state: SessionState, turns: Mapping[str, TS], actions: Sequence[q.QueueAction],
                 *, wall_time_ms: int, snapshots: Mapping[str, str],
                 active: bool = True) -> list[Step]:  # fmt: skip
    """The rows the queue's `actions` mean, from the Session in `state` with its pending
    turns in `turns` (before their side effects): a dispatch resumes an interrupted Session
    or activates an idle one (its warm worker) and arms the turn's wall time; a worker
    start is the Session's `start`; a failed turn is rejected while queued, else lost; an
    idle worker's release is armed. A running Session left with no `active` turn settles
    to `idle` (idle means no activation holds the Session lease)."""
    steps: list[Step] = []
    turns = dict(turns)
    for action in actions:
        match action:
            case q.Dispatch(turn_id):
                taken = first_accepted(SESSION_TABLE, state,
                                       (SessionEvent.RESUME, SessionEvent.ACTIVATE))  # fmt: skip
                if taken is not None:
                    steps.append(SessionStep(taken))
                    state = _target(state, taken)
                # the activation records the admitted configuration it runs under
                steps.append(TurnStep(turn_id, TurnEvent.DISPATCH, payload=snapshots))
                turns[turn_id] = TS.DISPATCHING
                steps.append(Arm(Wake(WALL_TIME, after_ms=wall_time_ms, subject=turn_id)))
            case q.StartWorker():
                steps.append(SessionStep(SessionEvent.START))
                state = _target(state, SessionEvent.START)
            case q.FailTurn(turn_id, reason) if turn_id in turns:
                if turns.pop(turn_id) is TS.QUEUED:
                    steps.append(TurnStep(turn_id, TurnEvent.REJECT, reason))
                else:
                    steps.append(EndTurn(turn_id, "lost", reason))
            case q.ReleaseAt(at_ms):
                steps.append(Arm(Wake(IDLE_RELEASE, at_wall_ms=at_ms)))
    if not active and state is SessionState.RUNNING:
        steps.append(SessionStep(SessionEvent.SETTLE))
    return steps


def gone_events(state: SessionState, *, expected: bool, launch_failed: bool,
                restarting: bool) -> tuple[SessionEvent, ...]:  # fmt: skip
    """The Session's own rows when its worker is gone (before the queue's): a stop ends
    `stopped`; an expected exit of a live worker is its release; an unexpected one fails a
    start (a launch that never made a process leaves it idle) or is a lost worker. A
    Session recovering with no new worker coming is recovered."""
    e = SessionEvent
    failed = e.LAUNCH_FAILED if launch_failed else e.START_FAILED
    candidates = (e.STOPPED, e.RELEASE) if expected else (e.STOPPED, failed, e.WORKER_LOST)
    events: list[SessionEvent] = []
    found = first_accepted(SESSION_TABLE, state, candidates)
    if found is not None:
        events.append(found)
        state = _target(state, found)
    if state is SessionState.RECOVERING and not restarting:
        events.append(e.RECOVERED)
    return tuple(events)


def end_events(state: TS, outcome: str, reason: str | None = None) -> tuple[TurnStep, ...]:
    """The turn rows of a dispatched turn's end (`outcome`: completed, failed, interrupted,
    lost): one still dispatching is first started, unless it was lost before it ran; a
    failed turn says why (`turn_failed` unless `reason`), a lost one gives `reason`."""
    e = TurnEvent
    final = {"completed": e.COMPLETED, "interrupted": e.INTERRUPTED, "lost": e.RUNTIME_LOST}
    last = final.get(outcome, e.FAILED)
    why = (
        reason
        if last is e.RUNTIME_LOST
        else (reason or "turn_failed")
        if last is e.FAILED
        else None
    )
    steps = (TurnStep("", last, why),)
    if state is TS.DISPATCHING and outcome != "lost":
        return (TurnStep("", e.STARTED), *steps)
    return steps


def turn_end_event(state: SessionState, outcome: str) -> SessionEvent | None:
    """The Session's row when its running turn ends: an interrupted turn interrupts a
    running or waiting Session; a turn ending while its approval waits withdraws it."""
    e = SessionEvent
    candidates: tuple[SessionEvent, ...] = (e.INTERRUPTED,) if outcome == "interrupted" else ()
    if state is SessionState.WAITING_APPROVAL:
        candidates += (e.APPROVAL_WITHDRAWN,)
    return first_accepted(SESSION_TABLE, state, candidates)


RUNTIME_LOST: Final = "runtime_lost"  # an exit reason: the worker's runtime (its Node) is gone


def gone_reasons(actions: Sequence[q.QueueAction], *, timed_out: str | None,
                 exit_reason: str) -> tuple[q.QueueAction, ...]:  # fmt: skip
    """Why the turns a gone worker took with it failed: the turn past its wall time says
    `wall_time_exceeded`, not lost; a worker whose runtime went (`runtime_lost`: its
    Execution Node was lost) fails its turn `runtime_lost`, as a Node restart does; any
    other exit keeps the queue's `worker_failed`."""
    lost = exit_reason == RUNTIME_LOST
    changed: list[q.QueueAction] = []
    for action in actions:
        if isinstance(action, q.FailTurn) and action.turn_id == timed_out:
            action = q.FailTurn(action.turn_id, "wall_time_exceeded")
        elif isinstance(action, q.FailTurn) and lost and action.reason == "worker_failed":
            action = q.FailTurn(action.turn_id, RUNTIME_LOST)
        changed.append(action)
    return tuple(changed)
