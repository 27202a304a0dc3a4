"""The Session and turn lifecycles, as transition tables the Session actor applies.

States are the spec's ("Lifecycle baseline"): a Session is idle, starting, running,
waiting-approval, interrupted, recovering, stopping, stopped or failed; a turn is queued,
dispatching, running, completed, failed or interrupted. Choices where the spec is silent
(written up in docs/lifecycles.md):
  * `stopped` and `failed` are terminal: a stopped Session takes no new turns (create
    another); `session.stop` from `idle` goes straight to `stopped` (no worker to stop).
  * `idle` means no activation holds the Session lease (spec): a Session between turns is
    `idle` whether its worker is still warm or not (its `activity` tells: `idle` warm,
    `stopped` none); a turn dispatched to a warm worker `activate`s it (`running`), and a
    turn that ends with none dispatched after it `settle`s it back to `idle`.
  * A Node restart sends a Session that had a worker to `recovering` (and one that was
    `stopping` to `stopped`: its worker died with the Node and is swept); `recovering` ends
    in `idle`, or `starting` when turns are queued, or `failed`.
  * A cancelled queued turn, a queued turn of a stopped Session and a dispatched turn
    interrupted before its worker took it (`turn.abandon`: the worker is fenced, so it
    never starts it) are `failed` with reason `turn_rejected`; a turn dispatching or running
    when its runtime died is `failed` with reason `runtime_lost` (its outcome is unknown,
    so it is never re-run).
Callers: `client` (an API request), `node` (the Node itself), `worker` (a worker frame).
"""

from __future__ import annotations

import enum

from actors._table import CLIENT, NODE, WORKER, Transition, TransitionTable, creation, row

__all__ = ["CLIENT", "NODE", "WORKER"]

# Worker initialization bound (spec: 15 s) and the bounded stop: interrupt 10 s, then
# terminate 5 s before kill.
START_TIMEOUT_MS = 15_000
STOP_TIMEOUT_MS = 15_000
INTERRUPT_TIMEOUT_MS = 15_000
RECOVERY_TIMEOUT_MS = 30_000


class SessionState(enum.Enum):
    IDLE = "idle"
    STARTING = "starting"
    RUNNING = "running"
    WAITING_APPROVAL = "waiting-approval"
    INTERRUPTED = "interrupted"
    RECOVERING = "recovering"
    STOPPING = "stopping"
    STOPPED = "stopped"
    FAILED = "failed"


class SessionEvent(enum.Enum):
    CREATE = "session.create"  # creation is a transition: into idle, with its receipt
    START = "session.start"  # a turn waits and no worker runs: launch a new attempt
    WORKER_READY = "worker.initialized"
    START_FAILED = "worker.start_failed"
    LAUNCH_FAILED = "worker.launch_failed"  # no process started: back to idle, usable
    APPROVAL_REQUESTED = "worker.approval_requested"
    APPROVAL_RESOLVED = "session.approval_resolve"
    APPROVAL_WITHDRAWN = "session.approval_withdrawn"  # the turn ended without an answer
    INTERRUPTED = "worker.interrupted"
    RESUME = "session.resume"  # the next turn goes to the live worker
    ACTIVATE = "session.activate"  # a turn goes to the warm worker of an idle Session
    SETTLE = "session.settle"  # the turn ended, none followed: idle, the worker kept warm
    RELEASE = "session.release"  # the worker was let go (queue empty, idle)
    STOP = "session.stop"
    STOPPED = "worker.stopped"
    STOP_FAILED = "worker.stop_failed"
    WORKER_LOST = "worker.lost"  # crash, or fenced after missed heartbeats
    NODE_RESTARTED = "node.restarted"
    RECOVERED = "session.recovered"
    RECOVERY_FAILED = "session.recovery_failed"


def _session_rows() -> list[Transition[SessionState, SessionEvent]]:
    s, e = SessionState, SessionEvent
    live = (s.STARTING, s.RUNNING, s.WAITING_APPROVAL, s.INTERRUPTED)
    rows = [
        row(s.IDLE, e.START, s.STARTING, NODE, emits="session.starting",
            timeout_ms=START_TIMEOUT_MS, on_timeout=e.START_FAILED, recovery=s.RECOVERING),
        row(s.IDLE, e.STOP, s.STOPPED, CLIENT, emits="session.stopped", receipt=True),
        row(s.STARTING, e.WORKER_READY, s.RUNNING, WORKER, emits="session.running",
            recovery=s.RECOVERING),
        row(s.STARTING, e.START_FAILED, s.FAILED, NODE, WORKER, emits="session.failed"),
        row(s.STARTING, e.LAUNCH_FAILED, s.IDLE, NODE, emits="session.idle"),
        row(s.RUNNING, e.APPROVAL_REQUESTED, s.WAITING_APPROVAL, WORKER,
            emits="session.waiting_approval", recovery=s.RECOVERING),
        row(s.RUNNING, e.INTERRUPTED, s.INTERRUPTED, WORKER, NODE,
            emits="session.interrupted", recovery=s.RECOVERING),
        row(s.RUNNING, e.RELEASE, s.IDLE, NODE, emits="session.idle"),
        row(s.RUNNING, e.SETTLE, s.IDLE, NODE, emits="session.idle"),
        row(s.IDLE, e.ACTIVATE, s.RUNNING, NODE, emits="session.running",
            recovery=s.RECOVERING),
        row(s.WAITING_APPROVAL, e.APPROVAL_RESOLVED, s.RUNNING, CLIENT,
            emits="session.running", receipt=True, recovery=s.RECOVERING),
        row(s.WAITING_APPROVAL, e.APPROVAL_WITHDRAWN, s.RUNNING, NODE, WORKER,
            emits="session.running", recovery=s.RECOVERING),
        row(s.WAITING_APPROVAL, e.INTERRUPTED, s.INTERRUPTED, WORKER, NODE,
            emits="session.interrupted", recovery=s.RECOVERING),
        row(s.INTERRUPTED, e.RESUME, s.RUNNING, NODE, emits="session.running",
            recovery=s.RECOVERING),
        row(s.INTERRUPTED, e.RELEASE, s.IDLE, NODE, emits="session.idle"),
        row(s.RECOVERING, e.RECOVERED, s.IDLE, NODE, emits="session.idle"),
        row(s.RECOVERING, e.START, s.STARTING, NODE, emits="session.starting",
            timeout_ms=START_TIMEOUT_MS, on_timeout=e.START_FAILED, recovery=s.RECOVERING),
        row(s.RECOVERING, e.RECOVERY_FAILED, s.FAILED, NODE, emits="session.failed"),
        row(s.RECOVERING, e.NODE_RESTARTED, s.RECOVERING, NODE, emits="session.recovering",
            timeout_ms=RECOVERY_TIMEOUT_MS, on_timeout=e.RECOVERY_FAILED, recovery=s.RECOVERING),
        row(s.STOPPING, e.STOPPED, s.STOPPED, NODE, emits="session.stopped"),
        row(s.STOPPING, e.STOP_FAILED, s.FAILED, NODE, emits="session.failed"),
        row(s.STOPPING, e.NODE_RESTARTED, s.STOPPED, NODE, emits="session.stopped"),
    ]  # fmt: skip
    for state in (*live, s.RECOVERING):
        rows.append(
            row(state, e.STOP, s.STOPPING, CLIENT, emits="session.stopping", receipt=True,
                timeout_ms=STOP_TIMEOUT_MS, on_timeout=e.STOP_FAILED, recovery=s.STOPPED)
        )  # fmt: skip
    for state in live:
        for event in (e.WORKER_LOST, e.NODE_RESTARTED):
            rows.append(
                row(state, event, s.RECOVERING, NODE, emits="session.recovering",
                    timeout_ms=RECOVERY_TIMEOUT_MS, on_timeout=e.RECOVERY_FAILED,
                    recovery=s.RECOVERING)
            )  # fmt: skip
    return rows


SESSION_TABLE: TransitionTable[SessionState, SessionEvent] = TransitionTable(
    "session",
    states=SessionState,
    events=SessionEvent,
    initial=SessionState.IDLE,
    terminal=(SessionState.STOPPED, SessionState.FAILED),
    rows=_session_rows(),
    create=creation(
        SessionEvent.CREATE, SessionState.IDLE, CLIENT, emits="session.created", receipt=True
    ),
    recover_with=SessionEvent.NODE_RESTARTED,
)


class TurnState(enum.Enum):
    QUEUED = "queued"
    DISPATCHING = "dispatching"
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    INTERRUPTED = "interrupted"


class TurnEvent(enum.Enum):
    SEND = "turn.send"  # creation: the turn is queued, with its receipt
    DISPATCH = "turn.dispatch"  # the prompt goes to the worker
    CANCEL = "turn.cancel"  # failed, reason turn_rejected
    REJECT = "turn.reject"  # the Session stopped or failed with it queued: turn_rejected
    REQUEUE = "turn.requeue"  # the worker never received the prompt
    STARTED = "worker.turn_started"
    COMPLETED = "worker.turn_completed"
    FAILED = "worker.turn_failed"
    INTERRUPT = "turn.interrupt"
    ABANDON = "turn.abandon"  # interrupted before its worker took it: failed, turn_rejected
    INTERRUPTED = "worker.turn_interrupted"
    RUNTIME_LOST = "turn.runtime_lost"  # the worker or the Node died under it


def _turn_rows() -> list[Transition[TurnState, TurnEvent]]:
    t, e = TurnState, TurnEvent
    return [
        row(t.QUEUED, e.DISPATCH, t.DISPATCHING, NODE, emits="turn.dispatching",
            timeout_ms=START_TIMEOUT_MS, on_timeout=e.RUNTIME_LOST, recovery=t.FAILED),
        row(t.QUEUED, e.CANCEL, t.FAILED, CLIENT, emits="turn.failed", receipt=True,
            expects_revision=True),
        row(t.QUEUED, e.REJECT, t.FAILED, NODE, emits="turn.failed"),
        row(t.DISPATCHING, e.STARTED, t.RUNNING, WORKER, emits="turn.started", recovery=t.FAILED),
        row(t.DISPATCHING, e.REQUEUE, t.QUEUED, NODE, emits="turn.requeued"),
        row(t.DISPATCHING, e.RUNTIME_LOST, t.FAILED, NODE, emits="turn.failed"),
        row(t.DISPATCHING, e.ABANDON, t.FAILED, CLIENT, emits="turn.failed", receipt=True),
        row(t.RUNNING, e.COMPLETED, t.COMPLETED, WORKER, emits="turn.completed"),
        row(t.RUNNING, e.FAILED, t.FAILED, WORKER, NODE, emits="turn.failed"),
        row(t.RUNNING, e.INTERRUPT, t.RUNNING, CLIENT, emits="turn.interrupt_requested",
            receipt=True, timeout_ms=INTERRUPT_TIMEOUT_MS, on_timeout=e.INTERRUPTED,
            recovery=t.FAILED),
        row(t.RUNNING, e.INTERRUPTED, t.INTERRUPTED, WORKER, NODE, emits="turn.interrupted"),
        row(t.RUNNING, e.RUNTIME_LOST, t.FAILED, NODE, emits="turn.failed"),
    ]  # fmt: skip


TURN_TABLE: TransitionTable[TurnState, TurnEvent] = TransitionTable(
    "turn",
    states=TurnState,
    events=TurnEvent,
    initial=TurnState.QUEUED,
    terminal=(TurnState.COMPLETED, TurnState.FAILED, TurnState.INTERRUPTED),
    rows=_turn_rows(),
    refusals={TurnEvent.CANCEL: "turn_not_queued"},
    create=creation(TurnEvent.SEND, TurnState.QUEUED, CLIENT, emits="turn.queued", receipt=True),
    recover_with=TurnEvent.RUNTIME_LOST,
)

TABLES: tuple[
    TransitionTable[SessionState, SessionEvent] | TransitionTable[TurnState, TurnEvent], ...
] = (
    SESSION_TABLE,
    TURN_TABLE,
)
