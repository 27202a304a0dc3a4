"""The Session actor: one class holding the collaborators that do its work.

`SessionActor` reads its mailbox and routes each message: `SessionCore` (`_actor`) holds
the memory, the queue and the one write path; `Capacity` its slot and activation;
`WorkerDriver` its worker attempts; `TurnProgress` and `AgentEvents` the running turn's
events; `ClientOps` and `SendBatch` what clients ask; `Resumption` what an earlier
incarnation left. Each is given what it uses; none inherits from another.

`rehydrate(ctx, session_id)` is the registry's spawn function: it reads the Session and its
pending turns and builds the actor. After a `storage_conflict` (another writer changed the
Session's rows underneath it) the actor reloads its memory from storage, so the next
command is decided on what is stored.
"""

from __future__ import annotations

import logging
from typing import Any

import attrs
import outcome

from actors._actor import Envelope
from actors._effects import EffectScope
from actors._timers import Fired
from maia.core import MaiaError
from storage import MutationResult

from . import _lazy_wakes as lazy_wakes
from . import _queue as q
from . import _sql_turns as turns_sql
from ._actor import SessionCore
from ._agent_events import AgentEvents
from ._approval_desk import ApprovalDesk
from ._attempt import Attempt, TurnBuffer
from ._batch import SendBatch
from ._capacity import Capacity
from ._client_ops import ClientOps
from ._driver import WorkerDriver
from ._lifecycles import SessionState, TurnState
from ._messages import (
    PROGRESS_BATCH_MAX,
    WALL_TIME,
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
from ._progress import TurnProgress
from ._resume import Resumption
from ._store import Draft, TurnMemo, wake

MAX_SENDS_TOGETHER = 256  # sends one transaction applies at most
_CLIENT = (SendTurn, CancelTurn, InterruptTurn, StopSession, RenameSession, ArchiveSession,
           RespondApproval)  # fmt: skip
log = logging.getLogger("maia.session")
_CLOSED = (SessionState.STOPPING, SessionState.STOPPED, SessionState.FAILED)
STORAGE_CONFLICT = "storage_conflict"


class SessionActor:
    """One Session. Build with `rehydrate`; the registry feeds it messages."""

    def __init__(self, ctx: SessionContext, memory: Draft, queue: q.QueueState,
                 lost: tuple[str, ...] = ()) -> None:  # fmt: skip
        self.core = core = SessionCore(ctx, memory, queue, Attempt())
        buffer = TurnBuffer(memory.session_id, ctx.live)
        self.capacity = capacity = Capacity(core)
        self.driver = driver = WorkerDriver(core, capacity, buffer)
        self.approvals = ApprovalDesk(core, buffer)
        self.agent = agent = AgentEvents(core, buffer, self.approvals)
        self.progress = TurnProgress(core, capacity, driver, agent, buffer)
        self.client = ClientOps(core, capacity, driver, buffer)
        self.sends = SendBatch(core, capacity, driver)
        self.resumption = Resumption(core, capacity, driver, lost)

    @property
    def session_id(self) -> str:
        return self.core.session_id

    def attach(self, scope: EffectScope) -> None:
        self.core.attach(scope)

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
                await self.core.refresh_config()
                if self.resumption.due() and not isinstance(first, Resume):
                    await self.resumption.resume()  # before anything else happens to it
                if isinstance(first, SendTurn):
                    await self._sends(run)
                elif isinstance(first, Progress):
                    events = tuple(e for x in run if isinstance(x.message, Progress)
                                   for e in x.message.events)  # fmt: skip
                    await self.progress.progress(Progress(first.attempt_id, events))
                else:
                    run[0].resolve(await self.handle(first))
            except MaiaError as refusal:
                for envelope in run:
                    envelope.refuse(refusal)
                await self._after_refusal(refusal)

    async def _sends(self, run: list[Envelope[Message]]) -> None:
        sends = [e.message for e in run if isinstance(e.message, SendTurn)]
        answers = await self.sends.send_batch(sends)
        for envelope, answer in zip(run, answers, strict=True):
            if isinstance(answer, outcome.Value):
                envelope.resolve(answer.value)
            else:
                envelope.refuse(answer.error)  # type: ignore[attr-defined]
        for answer in answers:
            if isinstance(answer, outcome.Error) and isinstance(answer.error, MaiaError):
                await self._after_refusal(answer.error)
                break

    async def handle(self, message: Message) -> MutationResult | None:
        """Handle one message. Raises `MaiaError` for a refused client message."""
        if isinstance(message, _CLIENT):
            return await self._client(message)
        try:
            await self._internal(message)
        except MaiaError as error:  # a refused internal step is our bug: say so loudly
            log.error("session %s: %s failed: %r", self.session_id, type(message).__name__,
                      error)  # fmt: skip
            await self._after_refusal(error)
        return None

    async def _client(self, message: Message) -> MutationResult | None:
        client = self.client
        match message:
            case SendTurn():  # a send alone is a batch of one: one path, one refusal
                (answer,) = await self.sends.send_batch([message])
                return answer.unwrap()
            case CancelTurn():
                return await client.cancel_turn(message)
            case InterruptTurn():
                return await client.interrupt_turn(message)
            case StopSession():
                return await client.stop_session(message)
            case RenameSession():
                return await client.rename_session(message)
            case ArchiveSession():
                return await client.archive_session(message)
            case RespondApproval():
                return await self.approvals.respond(message)
        return None

    async def _internal(self, message: Message) -> None:
        driver = self.driver
        match message:
            case Progress():
                await self.progress.progress(message)
            case Flush():
                await self.progress.flush()
            case WorkerSpawned():
                await driver.worker_spawned(message)
            case WorkerInitialized():
                await driver.worker_initialized(message)
            case WorkerExited():
                await driver.worker_exited(message)
            case IdleTick():
                await driver.tick()
            case Resume():
                await self.resumption.resume()
            case WallTime():
                await self.progress.wall_time(message)
            case Reclaim():
                await driver.reclaim()
            case ApprovalExpired():
                await self.approvals.expired(message)
            case ActivationFree():
                await driver.activation_free()
            case Fired():
                await self.timer_fired(message)

    async def timer_fired(self, fired: Fired) -> None:
        """One of the Session's durable timers fell due: what it means, handled now. A lazy
        one (`_lazy_wakes`) that fell due before the deadline meant now is armed again."""
        if fired.name in lazy_wakes.LAZY:
            again = lazy_wakes.refire(self.core.memory, fired, self.core.now())
            if again is not None:
                await self.core.commit(lambda conn, draft: wake(draft, again))
                return
            if fired.name == WALL_TIME:
                fired = attrs.evolve(fired, subject_id=lazy_wakes.subject_now(
                    self.core.memory, fired))  # fmt: skip
        meant = timer_message(fired)
        if isinstance(meant, Resume):
            self.resumption.scheduled = False
        if meant is None:
            log.error("session %s: a timer it never arms fired: %r", self.session_id, fired)
            return
        await self._internal(meant)

    async def _after_refusal(self, error: MaiaError) -> None:
        """A row moved underneath the actor (`storage_conflict`): reload its memory from
        storage, as a restart would, so the next command is decided on what is stored."""
        if error.code != STORAGE_CONFLICT:
            return
        log.warning("session %s: its rows changed underneath it; reloading", self.session_id)
        try:
            memory, _, _ = await read_memory(self.core.ctx, self.session_id)
        except MaiaError as failed:  # gone meanwhile: its next message says so
            log.warning("session %s: not reloaded: %r", self.session_id, failed)
            return
        for turn_id, memo in memory.turns.items():  # a dispatched turn keeps its envelope
            known = self.core.memory.turns.get(turn_id)
            if known is not None:
                memo.cause = known.cause
        memory.armed, memory.wanted = self.core.memory.armed, self.core.memory.wanted
        self.core.memory = memory


async def read_memory(ctx: SessionContext, session_id: str) -> tuple[Draft, list[Any], bool]:
    """The Session's memory as stored, its pending turns' rows and whether it is archived.
    Raises `resource_not_found`."""
    row, turns = await ctx.store.read(
        lambda conn: turns_sql.session_and_pending_turns(conn, session_id)
    )
    if row is None:
        raise MaiaError("resource_not_found", f"session {session_id} does not exist",
                        {"resource": "session", "id": session_id})  # fmt: skip
    project_id, state, revision, activity, archived = row
    memos = {t[0]: TurnMemo(t[0], TurnState(t[1]), t[2], t[3]) for t in turns}
    memory = Draft(session_id, project_id, SessionState(state), revision, activity, memos,
                   ctx.clock.wall_ms())  # fmt: skip
    return memory, turns, bool(archived)


async def rehydrate(ctx: SessionContext, session_id: str) -> SessionActor:
    """Build the actor of `session_id` from storage. Raises `resource_not_found`."""
    memory, turns, archived = await read_memory(ctx, session_id)
    queue = q.QueueState(
        queued=tuple(t[0] for t in turns if t[1] == "queued"),
        limit=ctx.config.capacity.max_queued_messages,
        idle_ms=ctx.config.sessions.worker_idle_ms,
        closed=archived or memory.state in _CLOSED,
    )
    return SessionActor(ctx, memory, queue, lost=tuple(t[0] for t in turns if t[1] != "queued"))


def _joins(first: Message, message: Message, length: int) -> bool:
    """Whether `message` continues a run that starts with `first` (bounded)."""
    if isinstance(first, SendTurn):
        return isinstance(message, SendTurn) and length < MAX_SENDS_TOGETHER
    return (
        isinstance(first, Progress) and isinstance(message, Progress)
        and message.attempt_id == first.attempt_id and length < PROGRESS_BATCH_MAX
    )  # fmt: skip
