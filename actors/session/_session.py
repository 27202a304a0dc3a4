"""The Session actor's entry points: rehydration from storage and the message switch.

`rehydrate(ctx, session_id)` is the registry's spawn function: it reads the Session and its
pending turns and builds the actor. A Session found with a dispatched turn but no worker of
this actor (the Node restarted, or the actor crashed) fails that turn `runtime_lost` on
`Resume`, never re-running it, and starts a worker for the turns still queued.
"""

from __future__ import annotations

import logging
import sqlite3

import attrs
import outcome

from actors._actor import Envelope
from actors._timers import Fired, Wake
from maia.core import MaiaError
from storage import MutationResult

from . import _queue as q
from . import _sql as sql
from ._approvals import withdraw_pending
from ._batch import SendOps
from ._lifecycles import SessionEvent, SessionState, TurnState
from ._messages import (
    PROGRESS_BATCH_MAX,
    RESUME_RETRY,
    ActivationFree,
    ApprovalExpired,
    ArchiveSession,
    CancelTurn,
    Flush,
    IdleTick,
    InterruptTurn,
    Message,
    Progress,
    Reclaim,
    RenameSession,
    RespondApproval,
    Resume,
    SendTurn,
    SessionContext,
    StopSession,
    WallTime,
    WorkerExited,
    WorkerInitialized,
    WorkerSpawned,
    timer_message,
)
from ._store import Draft, TurnMemo, session_step

MAX_SENDS_TOGETHER = 256  # sends one transaction applies at most
RESUME_RETRY_MS = 5_000  # a fallback: a freed slot is handed on at once
_CLIENT = (SendTurn, CancelTurn, InterruptTurn, StopSession, RenameSession, ArchiveSession,
           RespondApproval)  # fmt: skip
log = logging.getLogger("maia.session")
_CLOSED = (SessionState.STOPPING, SessionState.STOPPED, SessionState.FAILED)
_HAD_WORKER = (
    SessionState.STARTING,
    SessionState.RUNNING,
    SessionState.WAITING_APPROVAL,
    SessionState.INTERRUPTED,
)


class SessionActor(SendOps):
    """One Session. Build with `rehydrate`; the registry feeds it messages."""

    lost: tuple[str, ...] = ()
    resume_scheduled: bool = False  # a fallback Resume is on its way

    async def handle_batch(self, envelopes: list[Envelope[Message]]) -> None:
        """Every queued message at once: a run of sends is one transaction, a run of one
        attempt's progress is applied together; the rest one by one, in mailbox order."""
        i = 0
        while i < len(envelopes):
            first = envelopes[i].message
            j = i + 1
            if isinstance(first, SendTurn | Progress):
                while j < len(envelopes) and _joins(first, envelopes[j].message, j - i):
                    j += 1
            run = envelopes[i:j]
            i = j
            try:
                await self.refresh_config()
                await self._before(first)
                if isinstance(first, SendTurn):
                    sends = [e.message for e in run if isinstance(e.message, SendTurn)]
                    for envelope, answer in zip(run, await self.send_batch(sends), strict=True):
                        if isinstance(answer, outcome.Value):
                            envelope.resolve(answer.value)
                        else:
                            envelope.refuse(answer.error)  # type: ignore[attr-defined]
                elif isinstance(first, Progress):
                    events = tuple(e for x in run if isinstance(x.message, Progress)
                                   for e in x.message.events)  # fmt: skip
                    await self.progress(Progress(first.attempt_id, events))
                else:
                    run[0].resolve(await self.handle(first))
            except MaiaError as refusal:
                for envelope in run:
                    envelope.refuse(refusal)

    async def _before(self, message: Message) -> None:
        """Turns lost with an earlier incarnation fail, and stranded ones get a worker,
        before anything else happens to the Session."""
        stranded = self.core.queued and self.core.worker is q.Worker.NONE and not self.core.closed
        if (self.lost or stranded) and not isinstance(message, Resume):
            await self.resume()

    async def handle(self, message: Message) -> MutationResult | None:
        """Handle one message. Raises `MaiaError` for a refused client message."""
        if isinstance(message, _CLIENT):
            return await self._client(message)
        try:
            await self._internal(message)
        except MaiaError as error:  # a refused internal step is our bug: say so loudly
            log.error("session %s: %s failed: %r", self.session_id, type(message).__name__,
                      error)  # fmt: skip
        return None

    async def _client(self, message: Message) -> MutationResult | None:
        match message:
            case SendTurn():
                return await self.send_turn(message)
            case CancelTurn():
                return await self.cancel_turn(message)
            case InterruptTurn():
                return await self.interrupt_turn(message)
            case StopSession():
                return await self.stop_session(message)
            case RenameSession():
                return await self.rename_session(message)
            case ArchiveSession():
                return await self.archive_session(message)
            case RespondApproval():
                return await self.respond_approval(message)
        return None

    async def _internal(self, message: Message) -> None:
        match message:
            case Progress():
                await self.progress(message)
            case Flush():
                await self.flush()
            case WorkerSpawned():
                await self.worker_spawned(message)
            case WorkerInitialized():
                await self.worker_initialized(message)
            case WorkerExited():
                await self.worker_exited(message)
            case IdleTick():
                await self.tick()
            case Resume():
                await self.resume()
            case WallTime():
                await self.wall_time(message)
            case Reclaim():
                await self.reclaim()
            case ApprovalExpired():
                await self.approval_expired(message)
            case ActivationFree():
                await self.activation_free()
            case Fired():
                await self.timer_fired(message)

    async def timer_fired(self, fired: Fired) -> None:
        """One of the Session's durable timers fell due: what it means, handled now."""
        meant = timer_message(fired)
        if isinstance(meant, Resume):
            self.resume_scheduled = False
        if meant is None:
            log.error("session %s: a timer it never arms fired: %r", self.session_id, fired)
            return
        await self._internal(meant)

    async def resume(self) -> None:
        """Fail turns lost with an earlier runtime; start a worker for the queued ones."""
        if (self.core.worker is not q.Worker.NONE or self.core.closed) and not self.lost:
            return
        after, actions = q.recover(
            self.core.queued, self.lost, limit=self.core.limit, idle_ms=self.core.idle_ms,
            now=self.now(),
        )  # fmt: skip
        after = attrs.evolve(after, closed=self.core.closed)
        if self.core.closed:
            actions = tuple(a for a in actions if not isinstance(a, q.StartWorker))
            after = attrs.evolve(after, worker=q.Worker.NONE)
        retry = False
        if not self.need_slot(actions):  # at capacity: keep them queued, try again soon
            actions = tuple(a for a in actions if not isinstance(a, q.StartWorker))
            after = attrs.evolve(after, worker=q.Worker.NONE)
            retry = True
        lost = self.lost
        if retry:
            self.ctx.slots.wait_for_slot(self.session_id)
            victim = self.ctx.slots.victim(self.session_id)
            if victim is not None:  # the longest idle worker makes room
                self.tell_other(victim, Reclaim())
            if not self.resume_scheduled:  # a durable timer, told back as Resume
                retry_later = Wake(RESUME_RETRY, after_ms=RESUME_RETRY_MS)
                await self.path.transact(lambda tx: tx.wake(retry_later))
                self.resume_scheduled = True
        warm = self.memory.state is SessionState.IDLE and self.memory.activity != "stopped"
        if not (lost or actions or warm
                or self.memory.state in (*_HAD_WORKER, SessionState.RECOVERING)):  # fmt: skip
            self.core = after
            return  # nothing to record: the turns wait for a slot

        def body(conn: sqlite3.Connection, draft: Draft) -> None:
            # A worker of an earlier incarnation is gone: its approvals can never be answered.
            withdraw_pending(conn, draft, "the worker is gone: the Node or its actor restarted")
            if draft.state in _HAD_WORKER:
                session_step(conn, draft, SessionEvent.NODE_RESTARTED)
            self.apply_rows(conn, draft, after, actions)
            if draft.state is SessionState.RECOVERING and not any(
                isinstance(a, q.StartWorker) for a in actions
            ):
                session_step(conn, draft, SessionEvent.RECOVERED)

        await self.commit(body)
        self.lost = ()
        self.core = after
        self.after_commit(actions)
        self.notify(*lost)


async def rehydrate(ctx: SessionContext, session_id: str) -> SessionActor:
    """Build the actor of `session_id` from storage. Raises `resource_not_found`."""
    row, turns = await ctx.store.read(lambda conn: sql.session_and_pending_turns(conn, session_id))
    if row is None:
        raise MaiaError("resource_not_found", f"session {session_id} does not exist",
                        {"resource": "session", "id": session_id})  # fmt: skip
    project_id, state, revision, activity, archived = row
    memos = {t[0]: TurnMemo(t[0], TurnState(t[1]), t[2], t[3]) for t in turns}
    memory = Draft(session_id, project_id, SessionState(state), revision, activity, memos,
                   ctx.clock.wall_ms())  # fmt: skip
    core = q.QueueState(
        queued=tuple(t[0] for t in turns if t[1] == "queued"),
        limit=ctx.config.capacity.max_queued_messages,
        idle_ms=ctx.config.sessions.worker_idle_ms,
        closed=bool(archived) or memory.state in _CLOSED,
    )
    actor = SessionActor(ctx, memory, core)
    actor.lost = tuple(t[0] for t in turns if t[1] != "queued")
    return actor


def _joins(first: Message, message: Message, length: int) -> bool:
    """Whether `message` continues a run that starts with `first` (bounded)."""
    if isinstance(first, SendTurn):
        return isinstance(message, SendTurn) and length < MAX_SENDS_TOGETHER
    return (
        isinstance(first, Progress) and isinstance(message, Progress)
        and message.attempt_id == first.attempt_id and length < PROGRESS_BATCH_MAX
    )  # fmt: skip
