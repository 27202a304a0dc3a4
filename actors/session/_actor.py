"""The Session actor: one per Session, applying its lifecycle and turn tables on storage.

Each message becomes at most one storage transaction: the transition asked for (with its
receipt, through `run_mutation`, when a client asked), the queue's consequences (the next
turn dispatched, a worker asked for, turns rejected) and their events. The actor adopts the
new state only after the commit, then performs the side effects (spawn, prompt, interrupt,
stop) in helper tasks that report back as messages. The queue itself is the pure core in
`_queue`; this module translates its actions into table rows and worker calls.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from actors._effects import EffectScope
from actors._errors import ActorError
from maia.core import MaiaError, new_id, to_json
from maia.protocol import Turn
from storage import Applied, MutationKey, MutationResult, ReceiptTarget, run_mutation

from . import _queue as q
from ._lifecycles import SessionEvent, SessionState, TurnEvent, TurnState
from ._messages import Command, Resume, SessionContext
from ._store import Draft, end_turn, session_step, set_activity, turn_step
from ._views import mutation_session, session_view, turn_view

T = TypeVar("T")
log = logging.getLogger("maia.session")
LIVE = (SessionState.RUNNING, SessionState.WAITING_APPROVAL, SessionState.INTERRUPTED)


def activity_of(core: q.QueueState) -> str:
    if core.active is not None or (core.queued and not core.closed):
        return "working"
    if core.worker in (q.Worker.READY, q.Worker.STARTING):
        return "idle"
    return "stopped"


class SessionCore:
    """The actor's state and the transaction plumbing; `SessionActor` adds the messages."""

    def __init__(self, ctx: SessionContext, memory: Draft, core: q.QueueState) -> None:
        self.ctx = ctx
        self.memory = memory
        self.core = core
        self.holds_slot = False
        self.effects: EffectScope | None = None
        self.approvals: dict[str, tuple[str, str]] = {}  # pending: approval -> (turn, call)

    @property
    def session_id(self) -> str:
        return self.memory.session_id

    def now(self) -> int:
        return self.ctx.clock.wall_ms()

    async def commit(self, body: Callable[[sqlite3.Connection, Draft], T]) -> T:
        """Run `body` on a copy of the memory in one transaction; adopt the copy on commit."""
        draft = self.memory.copy(self.now())
        views: list[Turn] = []

        def run(conn: sqlite3.Connection) -> T:
            value = body(conn, draft)
            # Snapshots of the turns it changed, for turn.wait to answer without a read.
            cached = draft.views
            views.extend(cached.get(t) or turn_view(conn, t) for t in draft.touched)
            return value

        value = await self.ctx.store.write(run)
        self.memory = draft
        self.ctx.notifier.publish(views)
        return value

    async def mutate(
        self, op_id: str, command: Command, apply: Callable[[sqlite3.Connection, Draft], Any]
    ) -> MutationResult:
        """A client mutation: idempotent by its key, with a receipt; `apply` returns the
        result's JSON (it runs only for a new command)."""
        key = MutationKey(command.actor_id, op_id, command.command_id)

        def body(conn: sqlite3.Connection, draft: Draft) -> MutationResult:
            def applied(c: sqlite3.Connection) -> Applied:
                result = apply(c, draft)
                return Applied(
                    result,
                    targets=tuple(draft.targets),
                    event_ids=tuple(draft.event_ids),
                    project_id=draft.project_id,
                )

            return run_mutation(conn, key=key, input_digest=command.digest, now_ms=draft.now,
                                apply=applied)  # fmt: skip

        return await self.commit(body)

    def session_target(self, draft: Draft, prior: int) -> None:
        draft.targets.append(
            ReceiptTarget("session", draft.session_id, "updated", prior, draft.revision)
        )

    def session_json(self, conn: sqlite3.Connection, draft: Draft) -> Any:
        return to_json(mutation_session(session_view(conn, draft.session_id, draft.now)))

    # -- the queue's actions ------------------------------------------------------------------

    def apply_rows(self, conn: sqlite3.Connection, draft: Draft, after: q.QueueState,
                   actions: tuple[q.QueueAction, ...]) -> None:  # fmt: skip
        """Write what the queue's actions mean for the rows (before their side effects)."""
        for action in actions:
            match action:
                case q.Dispatch(turn_id):
                    if draft.state is SessionState.INTERRUPTED:
                        session_step(conn, draft, SessionEvent.RESUME)
                    turn_step(conn, draft, turn_id, TurnEvent.DISPATCH)
                case q.StartWorker():
                    session_step(conn, draft, SessionEvent.START)
                case q.FailTurn(turn_id, reason):
                    memo = draft.turns.get(turn_id)
                    if memo is None:
                        continue
                    if memo.state is TurnState.QUEUED:
                        turn_step(conn, draft, turn_id, TurnEvent.REJECT, reason=reason)
                    else:
                        end_turn(conn, draft, turn_id, "lost", reason)
        set_activity(conn, draft, activity_of(after))

    def gone_rows(self, conn: sqlite3.Connection, draft: Draft, expected: bool,
                  actions: tuple[q.QueueAction, ...]) -> None:  # fmt: skip
        """The Session's own transition when its worker is gone (before the queue's rows)."""
        state = draft.state
        restarting = any(isinstance(a, q.StartWorker) for a in actions)
        if state is SessionState.STOPPING:
            session_step(conn, draft, SessionEvent.STOPPED)
        elif expected and state in (SessionState.RUNNING, SessionState.INTERRUPTED):
            session_step(conn, draft, SessionEvent.RELEASE)
        elif not expected and state is SessionState.STARTING:
            session_step(conn, draft, SessionEvent.START_FAILED)
        elif not expected and state in LIVE:
            session_step(conn, draft, SessionEvent.WORKER_LOST)
        if draft.state is SessionState.RECOVERING and not restarting:
            session_step(conn, draft, SessionEvent.RECOVERED)

    def need_slot(self, actions: tuple[q.QueueAction, ...]) -> bool:
        """Take a live-Session slot if `actions` start a worker; False if none is free."""
        if self.holds_slot or not any(isinstance(a, q.StartWorker) for a in actions):
            return True
        if not self.ctx.slots.try_acquire():
            return False
        self.holds_slot = True
        return True

    def settle_slot(self) -> None:
        """Give the slot back once no worker runs or is wanted."""
        if self.holds_slot and self.core.worker is q.Worker.NONE:
            self.ctx.slots.release()
            self.holds_slot = False
            waiting = self.ctx.slots.next_waiting()
            if waiting is not None:  # hand the slot on: that Session's turns wait for it
                self.tell_other(waiting, Resume())

    def attach(self, scope: EffectScope) -> None:
        self.effects = scope

    def effect(self, name: str, run: Callable[[], Awaitable[None]]) -> None:
        """Start `run` in this actor's effect scope (after a commit)."""
        if self.effects is None:
            raise RuntimeError(f"session {self.session_id}: no effect scope attached")
        self.effects.start(name, run)

    def tell_other(self, session_id: str, message: object) -> None:
        """Tell another Session's actor, as an effect; a refusal (overloaded, gone) is not
        our failure, so it is logged."""

        async def tell() -> None:
            try:
                await self.ctx.tell(session_id, message)
            except (MaiaError, ActorError) as error:
                log.warning("session %s: %s to %s not delivered: %r", self.session_id,
                            type(message).__name__, session_id, error)  # fmt: skip

        self.effect("tell", tell)

    def notify(self, *turn_ids: str) -> None:
        self.ctx.notifier.notify(self.session_id)
        for turn_id in turn_ids:
            self.ctx.notifier.notify(turn_id)


def saturated(limit: int) -> MaiaError:
    return MaiaError(
        "saturated",
        f"the Node is at capacity: {limit} Sessions have a running worker; retry shortly",
        {"detail": "live Session limit", "limit": limit},
    )


def new_turn_id() -> str:
    return new_id("turn")
