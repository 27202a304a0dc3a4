"""What a Session actor is told or asked, and the services it runs on.

Client messages carry their idempotency key (actor, operation, commandId) and the digest of
the normalized input, so the actor runs them through `run_mutation` in the same transaction
as the transition. Worker messages name the attempt they come from: a message of an attempt
the actor already let go is recorded (its end) but never drives the queue.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import attrs
import outcome
import trio

from actors._flush import FlushTimer
from actors._notify import Notifier
from actors._workers import WorkerSlots
from maia.config import UserConfig
from maia.protocol import Clock
from storage import MutationResult, Storage
from supervision.workers import TurnEvent, WorkerHandle, WorkerSupervisor


@attrs.frozen
class Command:
    """The idempotency key and input digest of a client mutation."""

    command_id: str
    actor_id: str
    digest: str


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
    command: Command
    turn_id: str
    expected_revision: int | None


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
    reason: str


PROGRESS_BATCH_MAX = 64  # worker events one Progress message carries at most


@attrs.define
class Progress:
    """A running turn's worker events, in arrival order. The pump adds to the message until
    its actor takes it (`closed`), so a burst of events costs one mailbox message."""

    attempt_id: str
    events: list[TurnEvent]
    closed: bool = False

    def join(self, event: TurnEvent) -> bool:
        """Add `event` if the actor has not taken this message yet and it has room."""
        if self.closed or len(self.events) >= PROGRESS_BATCH_MAX:
            return False
        self.events.append(event)
        return True


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
    """An exec turn's wall-time limit passed: interrupt it; it fails wall_time_exceeded."""

    turn_id: str


@attrs.define(eq=False)
class PendingSend:
    """One caller's send and, once handled, its answer."""

    message: SendTurn
    done: trio.Event = attrs.field(factory=trio.Event)
    answer: outcome.Outcome[MutationResult] | None = None

    def settle(self, answer: outcome.Outcome[MutationResult]) -> None:
        if self.answer is None:
            self.answer = answer
            self.done.set()


@attrs.define(eq=False)
class SendBatch:
    """Sends for one Session; `closed` once its actor took it (later sends start anew)."""

    items: list[PendingSend] = attrs.field(factory=list)
    closed: bool = False

    def fail(self, error: BaseException) -> None:
        self.closed = True
        for item in self.items:
            item.settle(outcome.Error(error))


Message = (
    SendTurn | CancelTurn | InterruptTurn | StopSession | RenameSession | ArchiveSession
    | Resume | WorkerSpawned | WorkerInitialized | WorkerExited | Progress | Flush | IdleTick
    | WallTime | Reclaim | SendBatch
)  # fmt: skip


@attrs.frozen
class SessionContext:
    """The services every Session actor shares."""

    store: Storage
    clock: Clock
    config: UserConfig
    workers: WorkerSupervisor
    notifier: Notifier
    slots: WorkerSlots
    nursery: trio.Nursery  # the actors' helper tasks (worker watchers, pumps, timers)
    tell: Callable[[str, Any], Awaitable[None]]  # to a Session's live actor (spawning it)
    environ: Mapping[str, str]
    flush_timer: FlushTimer  # delays every Session's flush of buffered turn rows
    # The worker each Session's actor holds, so an actor that crashed and rehydrated can
    # stop the worker its previous incarnation left running.
    held: dict[str, WorkerHandle] = attrs.field(factory=dict)
    keepalive_s: float = 30.0  # how often a worker's watcher touches its actor
    # Live item records for attach subscribers (record, Session, turn, item, kind, text):
    # every delta as it arrives, while storage may coalesce them. Never blocks.
    live: Callable[[str, str, str, str, str, str], None] | None = None
