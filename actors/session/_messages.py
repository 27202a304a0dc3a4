"""What a Session actor is told or asked, and the services it runs on.

Client messages carry their idempotency key (actor, operation, commandId) and the digest of
the normalized input, so the actor runs them through `run_mutation` in the same transaction
as the transition. Worker messages name the attempt they come from: a message of an attempt
the actor already let go is recorded (its end) but never drives the queue.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final

import attrs

from actors._activations import ActivationSlots
from actors._flush import FlushTimer
from actors._notify import Notifier
from actors._timers import Fired
from actors._workers import WorkerSlots
from actors._write import WritePath
from maia.config import EffectiveConfig, UserConfig
from maia.core import Clock
from storage import Storage
from supervision.workers import TurnEvent, WorkerHandle, WorkerSupervisor


@attrs.frozen
class Command:
    """The idempotency key and input digest of a client mutation."""

    command_id: str
    actor_id: str
    digest: str
    correlation_id: str | None = None  # of its events and receipt; None: the commandId


@attrs.frozen
class SendTurn:
    command: Command
    text: str


@attrs.frozen
class CancelTurn:
    command: Command
    turn_id: str
    expected_revision: int


@attrs.frozen
class InterruptTurn:
    """`abandon`: a turn still dispatching (its worker has not taken it) is given up, its
    worker fenced, instead of refused `invalid_state` (the API asks so after its wait)."""

    command: Command
    turn_id: str
    expected_revision: int | None
    abandon: bool = False


@attrs.frozen
class StopSession:
    command: Command
    expected_revision: int | None


@attrs.frozen
class RenameSession:
    command: Command
    title: str
    expected_revision: int | None


@attrs.frozen
class ArchiveSession:
    command: Command
    expected_revision: int | None
    summary: str | None
    transcript_path: str | None


@attrs.frozen
class RespondApproval:
    command: Command
    approval_id: str
    decision: str  # allow | deny
    remember: bool = False
    message: str | None = None


@attrs.frozen
class ApprovalExpired:
    """A pending approval's `sessions.approvalTimeoutMs` passed."""

    approval_id: str


@attrs.frozen
class Resume:
    """Start a worker for turns left queued (after a restart or a refused start)."""


@attrs.frozen
class WorkerSpawned:
    handle: WorkerHandle


@attrs.frozen
class WorkerInitialized:
    attempt_id: str


@attrs.frozen
class WorkerExited:
    attempt_id: str | None  # None: the process never started
    reason: str  # the cause: the launch error, the exit status or signal, the fence reason
    stderr_tail: str = ""  # the last lines the worker (or an exec program) wrote to stderr


PROGRESS_BATCH_MAX = 256  # worker events the actor applies together at most


@attrs.frozen
class Progress:
    """Running-turn worker events of one attempt, in arrival order (the pump sends one
    message per batch the worker handle has ready; the actor applies every queued one
    together)."""

    attempt_id: str
    events: tuple[TurnEvent, ...]


@attrs.frozen
class Flush:
    """Persist what was buffered of the running turn (started, message text so far)."""


@attrs.frozen
class IdleTick:
    """The idle-release timer fired."""


@attrs.frozen
class Reclaim:
    """Another Session needs a worker slot: let an idle worker go now."""


@attrs.frozen
class WallTime:
    """A turn's wall-time limit passed (the executor's or maxWallTimeMsPerActivation,
    the smaller): interrupt it; it fails wall_time_exceeded."""

    turn_id: str


@attrs.frozen
class ActivationFree:
    """An activation slot was granted to this Session, or may be free: dispatch."""


Message = (
    SendTurn | CancelTurn | InterruptTurn | StopSession | RenameSession | ArchiveSession
    | RespondApproval | ApprovalExpired | Resume | WorkerSpawned | WorkerInitialized
    | WorkerExited | Progress | Flush | IdleTick | WallTime | Reclaim | ActivationFree | Fired
)  # fmt: skip

# The Session's durable timers (`actors._timers`: rows armed in the transition's own write,
# told back as `Fired`): the idle release of its worker, the running turn's wall time, a
# pending approval's expiry, the retry of a start that found no worker slot. None survives a
# Node restart (`_recovery` drops them: the worker they bound is gone, its approvals
# withdrawn, its queued turns resumed by the recovery itself).
IDLE_RELEASE: Final = "idle-release"
WALL_TIME: Final = "wall-time"  # of the running turn (its subject): one a Session at a time
_APPROVAL: Final = "approval-expiry:"
RESUME_RETRY: Final = "resume-retry"  # turns wait for a worker slot: try again (a fallback)


def approval_wake(approval_id: str) -> str:
    return _APPROVAL + approval_id


def timer_message(fired: Fired) -> IdleTick | WallTime | ApprovalExpired | Resume | None:
    """What a fired timer of the Session means (None: not one of its timers)."""
    if fired.name == IDLE_RELEASE:
        return IdleTick()
    if fired.name == RESUME_RETRY:
        return Resume()
    if fired.name == WALL_TIME and fired.subject_id is not None:
        return WallTime(fired.subject_id)
    if fired.name.startswith(_APPROVAL):
        return ApprovalExpired(fired.name.removeprefix(_APPROVAL))
    return None


@attrs.frozen
class SessionContext:
    """The services every Session actor shares."""

    store: Storage
    clock: Clock
    config: UserConfig
    workers: WorkerSupervisor
    notifier: Notifier
    slots: WorkerSlots
    tell: Callable[[str, Any], Awaitable[None]]  # to a Session's live actor (spawning it)
    environ: Mapping[str, str]
    flush_timer: FlushTimer  # delays every Session's flush of buffered turn rows
    activations: ActivationSlots  # maxConcurrentActivations, on the Node and per Project
    # The admitted configuration of a Project's work (limits, executors): read before each
    # message, so an admitted change applies to new work without a restart.
    config_of: Callable[[str | None], Awaitable[EffectiveConfig]]
    write_path: Callable[[str], WritePath]  # a Session actor's way to storage (`actors._write`)
    # Live item records for attach subscribers (record, Session, turn, item, kind, text):
    # every delta as it arrives, while storage may coalesce them. Never blocks.
    live: Callable[[str, str, str, str, str, str], None] | None = None
