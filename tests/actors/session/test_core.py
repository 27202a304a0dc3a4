"""The Session's pure core (`actors.session._core`), without trio or storage: the rows a
queue action or a worker fact means are the tables' own, in an order the tables accept."""

from __future__ import annotations

import itertools

import pytest

from actors import Wake
from actors.session import (
    IDLE_RELEASE,
    SESSION_TABLE,
    WALL_TIME,
    Arm,
    Dispatch,
    EndTurn,
    FailTurn,
    ReleaseAt,
    SessionEvent,
    SessionState,
    SessionStep,
    StartWorker,
    TurnEvent,
    TurnState,
    TurnStep,
    end_events,
    gone_events,
    gone_reasons,
    plan_actions,
    turn_end_event,
)

S, E = SessionState, SessionEvent


def _walk(state: SessionState, events: tuple[SessionEvent, ...]) -> SessionState:
    """Apply `events` through the table (with a caller the row allows); the state reached."""
    for event in events:
        found = SESSION_TABLE.get(state, event)
        assert found is not None, f"{state} has no row for {event}"
        state = SESSION_TABLE.step(state, event, caller=min(found.callers)).target
    return state


@pytest.mark.parametrize(
    ("state", "expected", "launch_failed", "restarting"),
    list(itertools.product(SessionState, (False, True), (False, True), (False, True))),
)
def test_every_gone_plan_is_accepted_by_the_table(
    state: SessionState, expected: bool, launch_failed: bool, restarting: bool
) -> None:
    """From every state, the rows of a gone worker walk the table without a refusal, and a
    Session is never left recovering when no new worker comes."""
    events = gone_events(state, expected=expected, launch_failed=launch_failed,
                         restarting=restarting)  # fmt: skip
    reached = _walk(state, events)
    if not restarting:
        assert reached is not S.RECOVERING


@pytest.mark.parametrize(
    ("state", "expected", "launch_failed", "events"),
    [
        (S.STOPPING, True, False, (E.STOPPED,)),
        (S.STOPPING, False, False, (E.STOPPED,)),
        (S.RUNNING, True, False, (E.RELEASE,)),
        (S.INTERRUPTED, True, False, (E.RELEASE,)),
        (S.WAITING_APPROVAL, True, False, ()),
        (S.STARTING, True, False, ()),
        (S.STARTING, False, False, (E.START_FAILED,)),
        (S.STARTING, False, True, (E.LAUNCH_FAILED,)),
        (S.RUNNING, False, False, (E.WORKER_LOST, E.RECOVERED)),
        (S.WAITING_APPROVAL, False, False, (E.WORKER_LOST, E.RECOVERED)),
        (S.RECOVERING, False, False, (E.RECOVERED,)),
        (S.IDLE, False, False, ()),
    ],
)
def test_the_rows_of_a_gone_worker(
    state: SessionState, expected: bool, launch_failed: bool, events: tuple[SessionEvent, ...]
) -> None:
    """A stop ends stopped; an expected exit of a live worker is its release; an unexpected
    one fails a start (a launch without a process goes back to idle) or loses the worker,
    which, with nothing restarting it, is recovered at once."""
    planned = gone_events(state, expected=expected, launch_failed=launch_failed,
                          restarting=False)  # fmt: skip
    assert planned == events


def test_a_lost_worker_that_restarts_stays_recovering() -> None:
    """With a new worker coming (the queue starts one), the Session waits in recovering."""
    assert gone_events(S.RUNNING, expected=False, launch_failed=False,
                       restarting=True) == (E.WORKER_LOST,)  # fmt: skip


def test_a_dispatch_resumes_an_interrupted_session_and_arms_the_wall_time() -> None:
    """From interrupted: resume, dispatch with the configuration snapshots, wall time armed
    for that turn; from running, no resume."""
    snapshots = {"userSnapshotId": "cfg_1"}
    plan = plan_actions(S.INTERRUPTED, {"turn_a": TurnState.QUEUED}, (Dispatch("turn_a"),),
                        wall_time_ms=5_000, snapshots=snapshots)  # fmt: skip
    assert plan == [
        SessionStep(E.RESUME),
        TurnStep("turn_a", TurnEvent.DISPATCH, payload=snapshots),
        Arm(Wake(WALL_TIME, after_ms=5_000, subject="turn_a")),
    ]
    running = plan_actions(S.RUNNING, {"turn_a": TurnState.QUEUED}, (Dispatch("turn_a"),),
                           wall_time_ms=5_000, snapshots={})  # fmt: skip
    assert [type(s) for s in running] == [TurnStep, Arm]


def test_a_warm_idle_session_activates_and_a_running_one_settles() -> None:
    """Idle means no activation holds the lease: a dispatch to an idle Session's warm
    worker activates it (running, no start); a running Session left with no active turn
    settles to idle after the idle release is armed; one keeping a turn does not."""
    plan = plan_actions(S.IDLE, {"turn_a": TurnState.QUEUED}, (Dispatch("turn_a"),),
                        wall_time_ms=5_000, snapshots={})  # fmt: skip
    assert plan[0] == SessionStep(E.ACTIVATE)
    assert SESSION_TABLE.step(S.IDLE, E.ACTIVATE, caller="node").target is S.RUNNING
    settled = plan_actions(S.RUNNING, {}, (ReleaseAt(9_000),), wall_time_ms=1, snapshots={},
                           active=False)  # fmt: skip
    assert settled == [Arm(Wake(IDLE_RELEASE, at_wall_ms=9_000)), SessionStep(E.SETTLE)]
    assert SESSION_TABLE.step(S.RUNNING, E.SETTLE, caller="node").target is S.IDLE
    kept = plan_actions(S.RUNNING, {}, (), wall_time_ms=1, snapshots={}, active=True)
    assert kept == []


def test_failed_turns_are_rejected_while_queued_and_lost_once_dispatched() -> None:
    """A queued turn is rejected, a dispatched one ends lost (the same reason); a turn the
    Session no longer holds is left alone; a worker start and an idle release are rows."""
    turns = {"turn_q": TurnState.QUEUED, "turn_r": TurnState.RUNNING}
    actions = (FailTurn("turn_q", "turn_rejected"), FailTurn("turn_r", "worker_failed"),
               FailTurn("turn_gone", "worker_failed"), StartWorker(), ReleaseAt(9_000))  # fmt: skip
    plan = plan_actions(S.IDLE, turns, actions, wall_time_ms=1, snapshots={})
    assert plan == [
        TurnStep("turn_q", TurnEvent.REJECT, "turn_rejected"),
        EndTurn("turn_r", "lost", "worker_failed"),
        SessionStep(E.START),
        Arm(Wake(IDLE_RELEASE, at_wall_ms=9_000)),
    ]


def test_a_start_the_table_refuses_is_refused_in_the_plan() -> None:
    """The plan threads the state through the table: a second start is its refusal."""
    with pytest.raises(Exception, match="does not apply"):
        plan_actions(S.IDLE, {}, (StartWorker(), StartWorker()), wall_time_ms=1, snapshots={})


@pytest.mark.parametrize(
    ("state", "outcome", "reason", "steps"),
    [
        (TurnState.DISPATCHING, "completed", None,
         [(TurnEvent.STARTED, None), (TurnEvent.COMPLETED, None)]),
        (TurnState.DISPATCHING, "lost", "runtime_lost", [(TurnEvent.RUNTIME_LOST, "runtime_lost")]),
        (TurnState.RUNNING, "failed", None, [(TurnEvent.FAILED, "turn_failed")]),
        (TurnState.RUNNING, "failed", "wall_time_exceeded",
         [(TurnEvent.FAILED, "wall_time_exceeded")]),
        (TurnState.RUNNING, "interrupted", None, [(TurnEvent.INTERRUPTED, None)]),
    ],
)  # fmt: skip
def test_the_rows_of_a_turns_end(
    state: TurnState, outcome: str, reason: str | None, steps: list[tuple[TurnEvent, str | None]]
) -> None:
    """A turn still dispatching is started first (unless lost before it ran); a failure
    says why."""
    assert [(s.event, s.reason) for s in end_events(state, outcome, reason)] == steps


def test_the_session_row_when_its_turn_ends() -> None:
    """An interrupted turn interrupts a running or waiting Session; any other end while an
    approval waits withdraws it; otherwise the Session does not move."""
    assert turn_end_event(S.RUNNING, "interrupted") is E.INTERRUPTED
    assert turn_end_event(S.WAITING_APPROVAL, "interrupted") is E.INTERRUPTED
    assert turn_end_event(S.WAITING_APPROVAL, "completed") is E.APPROVAL_WITHDRAWN
    assert turn_end_event(S.RUNNING, "completed") is None
    assert turn_end_event(S.INTERRUPTED, "interrupted") is None


@pytest.mark.parametrize(
    ("exit_reason", "timed_out", "reasons"),
    [
        ("exited with status 3", None, ["worker_failed", "turn_rejected"]),
        ("runtime_lost", None, ["runtime_lost", "turn_rejected"]),
        ("runtime_lost", "turn_a", ["wall_time_exceeded", "turn_rejected"]),
        ("exited with status 3", "turn_a", ["wall_time_exceeded", "turn_rejected"]),
    ],
)  # fmt: skip
def test_why_a_gone_workers_turns_failed(
    exit_reason: str, timed_out: str | None, reasons: list[str]
) -> None:
    """A worker gone with its runtime (`runtime_lost`) fails its turn `runtime_lost`; a turn
    past its wall time says so; other failures (a rejected queued turn) keep their reason."""
    actions = (FailTurn("turn_a", "worker_failed"), FailTurn("turn_b", "turn_rejected"),
               StartWorker())  # fmt: skip
    changed = gone_reasons(actions, timed_out=timed_out, exit_reason=exit_reason)
    assert [a.reason for a in changed if isinstance(a, FailTurn)] == reasons
    assert changed[-1] == StartWorker()
