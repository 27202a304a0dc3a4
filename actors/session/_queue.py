"""The turn queue of one Session, as a pure function: `step(state, event, now) -> (state, actions)`.

It decides what the Session actor does next and nothing else: which turn goes to the worker
and when, when a worker must be started or can be let go, and which turns end without
running. It performs nothing: the actor carries out the returned actions (storage writes,
worker calls) and feeds back what happened as events. Being pure, it is tested by a
Hypothesis state machine with the queue's invariants (spec: Turn queue operations):
  * at most `limit` pending turns, the active one included (`turn_queue_full` beyond);
  * queued turns dispatch in send order, each at most once, one at a time;
  * a turn that left the queue cannot be cancelled (`turn_not_queued`);
  * a turn that was active when the runtime died is failed `runtime_lost`, never re-run.
A refusal raises `MaiaError` and leaves the state as it was.
"""

from __future__ import annotations

import enum
import functools

import attrs

from maia.core import MAX_SESSION_PENDING_TURNS, MaiaError

# The queue's states carry no validators: the slot-copying evolve is attrs.evolve here,
# ~40% cheaper (each turn moves the state three or four times).
from supervision.leases._evolve import evolve


class Worker(enum.Enum):
    NONE = "none"
    STARTING = "starting"
    READY = "ready"
    STOPPING = "stopping"


@attrs.frozen
class QueueState:
    """What the queue knows: turns waiting in send order, the active turn, the worker."""

    queued: tuple[str, ...] = ()
    active: str | None = None  # dispatched: dispatching or running
    worker: Worker = Worker.NONE
    interrupting: bool = False
    closed: bool = False  # the Session is stopping or stopped: no new turns
    limit: int = MAX_SESSION_PENDING_TURNS
    idle_ms: int = 60_000  # how long a worker with nothing to do is kept
    idle_since: int | None = None

    @property
    def pending(self) -> int:
        """Queued plus active turns."""
        return len(self.queued) + (self.active is not None)

    def position(self, turn_id: str) -> int | None:
        """0 for the active turn, then dispatch order; None when not pending."""
        order = ((self.active,) if self.active is not None else ()) + self.queued
        return order.index(turn_id) if turn_id in order else None


# -- events -------------------------------------------------------------------------------


@attrs.frozen
class Send:
    turn_id: str


@attrs.frozen
class Cancel:
    turn_id: str


@attrs.frozen
class Interrupt:
    turn_id: str


@attrs.frozen
class Abandon:
    """The dispatched turn is given up before its worker took it: the worker is fenced (by
    the caller, before this step) and goes; the turn ends without running."""

    turn_id: str


@attrs.frozen
class WorkerReady:
    pass


@attrs.frozen
class WorkerGone:
    """The worker stopped or died (`expected`: the Node stopped it on purpose;
    `launch_failed`: no worker process was started at all, e.g. its cwd is gone or its
    executor unknown, so the Session stays open for a send once the cause is fixed)."""

    expected: bool = False
    launch_failed: bool = False


@attrs.frozen
class TurnEnded:
    turn_id: str


@attrs.frozen
class Tick:
    """Time passed: a worker idle past `idle_ms` is let go."""


@attrs.frozen
class Close:
    """The Session stops: queued turns are rejected, the worker is stopped."""


@attrs.frozen
class Wake:
    """An activation slot may be free now: dispatch the next turn if one waits."""


QueueEvent = (
    Send | Cancel | Interrupt | Abandon | WorkerReady | WorkerGone | TurnEnded | Tick | Close | Wake
)

# -- actions ------------------------------------------------------------------------------


@attrs.frozen
class StartWorker:
    pass


@attrs.frozen
class StopWorker:
    reason: str  # "idle" (released) or "stop" (session.stop)


@attrs.frozen
class Dispatch:
    turn_id: str


@attrs.frozen
class SendInterrupt:
    turn_id: str


@attrs.frozen
class FailTurn:
    turn_id: str
    reason: str  # turn_rejected, runtime_lost, worker_failed, session_stopped


@attrs.frozen
class ReleaseAt:
    """Send `Tick` at `at_ms` (the worker has been idle since `at_ms - idle_ms`)."""

    at_ms: int


QueueAction = StartWorker | StopWorker | Dispatch | SendInterrupt | FailTurn | ReleaseAt
Step = tuple[QueueState, tuple[QueueAction, ...]]


def recover(
    queued: tuple[str, ...], lost: tuple[str, ...], *, limit: int, idle_ms: int, now: int
) -> Step:
    """The queue after a Node restart: `lost` turns (active when it died) fail runtime_lost,
    `queued` ones stay queued in send order and get a new worker."""
    state = QueueState(queued=queued, limit=limit, idle_ms=idle_ms)
    actions: list[QueueAction] = [FailTurn(turn, "runtime_lost") for turn in lost]
    state, more = _advance(state, now)
    return state, (*actions, *more)


def _refuse(code: str, message: str, **details: object) -> MaiaError:
    return MaiaError(code, message, details)


def _not_in_hand(state: QueueState, turn_id: str, why: str) -> MaiaError:
    """`invalid_state` for a turn the ready worker does not hold. `details.state` is a turn
    state: `queued` when the queue holds it; else the queue cannot tell (it keeps no turn
    states: its active turn is dispatching or running), and the Session actor adds it."""
    details: dict[str, object] = {"resource": "turn", "id": turn_id}
    if turn_id in state.queued:
        details["state"] = "queued"
    return MaiaError("invalid_state", f"turn {turn_id} {why}", details)


def step(state: QueueState, event: QueueEvent, now: int, *, may_dispatch: bool = True) -> Step:
    """The next state and what to do. Raises `MaiaError` (state unchanged) for a refusal:
    `turn_queue_full`, `turn_not_queued`, `invalid_state`. With `may_dispatch` False (no
    activation slot: maxConcurrentActivations), a turn that would dispatch stays queued
    first, and `Wake` dispatches it later."""
    advance = functools.partial(_advance, may_dispatch=may_dispatch)
    match event:
        case Send(turn_id):
            if state.closed:
                # No `state`: the queue cannot tell stopping, stopped, failed or archived
                # apart. The actor refuses a closed Session's send before this, naming its
                # true state (`closed_refusal`).
                raise _refuse("invalid_state", "the Session takes no more turns",
                              resource="session")  # fmt: skip
            if state.pending >= state.limit:
                raise _refuse(
                    "turn_queue_full",
                    f"the Session has {state.limit} pending turns",
                    limit=state.limit,
                )
            return advance(evolve(state, queued=(*state.queued, turn_id)), now)
        case Cancel(turn_id) | Interrupt(turn_id) if turn_id in state.queued:
            rest = tuple(t for t in state.queued if t != turn_id)
            return evolve(state, queued=rest), (FailTurn(turn_id, "turn_rejected"),)
        case Cancel(turn_id):
            raise _refuse(
                "turn_not_queued", f"turn {turn_id} already left the queue", turnId=turn_id
            )
        case Interrupt(turn_id):
            if state.active != turn_id or state.worker is not Worker.READY:
                raise _not_in_hand(state, turn_id, "is not running")
            if state.interrupting:
                return state, ()
            return evolve(state, interrupting=True), (SendInterrupt(turn_id),)
        case Abandon(turn_id):
            if state.active != turn_id or state.worker is not Worker.READY:
                raise _not_in_hand(state, turn_id, "is not dispatched")
            # The fenced worker's exit (expected: it is stopping) starts the next one.
            return evolve(state, active=None, worker=Worker.STOPPING, interrupting=False,
                          idle_since=None), ()  # fmt: skip
        case WorkerReady():
            if state.worker is not Worker.STARTING:
                return state, ()
            return advance(evolve(state, worker=Worker.READY), now)
        case WorkerGone(expected, launch_failed):
            actions: list[QueueAction] = []
            if state.active is not None:
                reason = "session_stopped" if state.closed else "worker_failed"
                actions.append(FailTurn(state.active, reason))
            if not expected and state.worker is Worker.STARTING and not state.active:
                # The worker never came up: the waiting turns would only fail the same way.
                # The Session fails (its table: starting -> failed), so it takes no more.
                actions += [FailTurn(t, "worker_failed") for t in state.queued]
                # A launch that failed before any process leaves it open (back to idle).
                state = evolve(state, queued=(), closed=not launch_failed)
            gone = evolve(
                state, active=None, worker=Worker.NONE, interrupting=False, idle_since=None
            )
            gone, more = advance(gone, now)
            return gone, (*actions, *more)
        case TurnEnded(turn_id):
            if state.active != turn_id:
                return state, ()
            return advance(evolve(state, active=None, interrupting=False), now)
        case Tick():
            idle = state.idle_since
            if state.worker is Worker.READY and idle is not None and now >= idle + state.idle_ms:
                return evolve(state, worker=Worker.STOPPING, idle_since=None), (StopWorker("idle"),)
            return state, ()
        case Close():
            if state.closed:
                return state, ()
            actions = [FailTurn(t, "turn_rejected") for t in state.queued]
            closed = evolve(state, queued=(), closed=True, idle_since=None)
            if state.worker in (Worker.STARTING, Worker.READY):
                closed = evolve(closed, worker=Worker.STOPPING)
                actions.append(StopWorker("stop"))
            return closed, tuple(actions)
        case Wake():
            return advance(state, now)
    raise TypeError(f"not a queue event: {event!r}")  # our bug


def _advance(state: QueueState, now: int, *, may_dispatch: bool = True) -> Step:
    """Dispatch the next turn, start a worker for it, or note that the worker is idle."""
    if state.closed or state.active is not None:
        return evolve(state, idle_since=None), ()
    if state.queued:
        if state.worker is Worker.READY and not may_dispatch:
            return evolve(state, idle_since=None), ()  # it waits for an activation
        if state.worker is Worker.READY:
            head, *rest = state.queued
            moved = evolve(state, queued=tuple(rest), active=head, idle_since=None)
            return moved, (Dispatch(head),)
        if state.worker is Worker.NONE:
            return evolve(state, worker=Worker.STARTING, idle_since=None), (StartWorker(),)
        return state, ()
    if state.worker is Worker.READY and state.idle_since is None:
        return evolve(state, idle_since=now), (ReleaseAt(now + state.idle_ms),)
    return state, ()
