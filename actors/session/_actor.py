"""A Session's state and its one write path: `SessionCore`.

Each message becomes at most one storage transaction: the transition asked for (with its
receipt, through `run_mutation`, when a client asked), the queue's consequences (the next
turn dispatched, a worker asked for, turns rejected) and their events. The core adopts the
new memory only after the commit; the collaborators of `SessionActor` (`_session`) then
perform the side effects (spawn, prompt, interrupt, stop) in its effect scope. The queue
itself is the pure core in `_queue`; `apply_rows` translates its actions into table rows.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Awaitable, Callable
from contextlib import AbstractContextManager
from typing import Any, TypeVar

import attrs

from actors._effects import EffectScope
from actors._errors import ActorError
from actors._write import Command as WriteCommand
from actors._write import Tx
from maia.config import EffectiveConfig
from maia.core import MaiaError, new_id, to_json
from maia.protocol import Turn, TurnShowOutput
from storage import MutationResult, ReceiptTarget

from . import _core as core
from . import _queue as q
from ._attempt import Attempt
from ._envelope import commit_cause, dispatch_context
from ._items_page import items_page
from ._lifecycles import SessionState
from ._messages import Command, SessionContext
from ._store import Draft, apply_plan, flush_columns, session_step, set_activity
from ._views import mutation_session, session_view, turn_view

T = TypeVar("T")
Views = tuple[list[Turn], dict[str, TurnShowOutput]]  # a commit's turn snapshots, its pages
log = logging.getLogger("maia.session")


def activity_of(core: q.QueueState, waiting_approval: bool = False) -> str:
    """The announced activity: an active turn whose approval waits stays waiting_approval
    (a turn queued behind it changes nothing), else work, a ready worker or none."""
    if core.active is not None and waiting_approval:
        return "waiting_approval"
    if core.active is not None or (core.queued and not core.closed):
        return "working"
    if core.worker in (q.Worker.READY, q.Worker.STARTING):
        return "idle"
    return "stopped"


class SessionCore:
    """A Session's memory, its queue and the transaction plumbing every collaborator of
    `SessionActor` writes through; the effect scope its side effects run in."""

    def __init__(self, ctx: SessionContext, memory: Draft, queue: q.QueueState,
                 attempt: Attempt) -> None:  # fmt: skip
        self.ctx = ctx
        self.memory = memory
        self.queue = queue
        self.attempt = attempt  # its handle marks a dispatch; its executor bounds wall time
        self.path = ctx.write_path(memory.session_id)  # the one write path, this actor's
        self.effects: EffectScope | None = None
        self.approvals: dict[str, tuple[str, str]] = {}  # pending: approval -> (turn, call)
        self.config = EffectiveConfig(ctx.config, None, memory.project_id)

    async def refresh_config(self) -> None:
        """Take the admitted configuration of now (new work runs under it): the queue's
        limit follows maxQueuedMessages, its idle time sessions.workerIdleMs; the slots read
        the rest as they are asked."""
        try:
            self.config = await self.ctx.config_of(self.memory.project_id)
        except MaiaError as error:  # an unreadable snapshot: keep the last good one
            log.error("session %s: configuration not read: %r", self.session_id, error)
        limit = self.config.limits.max_queued_messages
        idle_ms = self.config.user.sessions.worker_idle_ms
        if (limit, idle_ms) != (self.queue.limit, self.queue.idle_ms):
            self.queue = attrs.evolve(self.queue, limit=limit, idle_ms=idle_ms)

    @property
    def session_id(self) -> str:
        return self.memory.session_id

    def now(self) -> int:
        return self.ctx.clock.wall_ms()

    async def commit(self, body: Callable[[sqlite3.Connection, Draft], T], *,
                     replayable: bool = False) -> T:  # fmt: skip
        """Run `body` on a copy of the memory in one transaction of the write path; adopt
        the copy on commit. `replayable`: `body` keeps its per-run state in the draft (or
        rebuilds it at its top), so storage may run it again after a sibling's failure."""
        box: dict[str, Any] = {}

        memory = self.memory  # what the events descend from: see `_envelope`

        def run(tx: Tx) -> T:
            # Everything a run leaves is rebuilt here: a replayed run starts as the first.
            draft = box["draft"] = self.memory.copy(tx.now).bind(tx)
            value = body(tx.conn, draft)
            flush_columns(tx.conn, draft)
            box["views"] = self._views(tx.conn, draft)
            return value

        value = await self.path.transact(run, envelope=lambda c: commit_cause(c, memory),
                                         replayable=replayable)  # fmt: skip
        self._adopt(box["draft"], box["views"])
        return value

    async def mutate(
        self, op_id: str, command: Command, apply: Callable[[sqlite3.Connection, Draft], Any]
    ) -> MutationResult:
        """A client mutation: idempotent by its key, with a receipt; `apply` returns the
        result's JSON (it runs only for a new command)."""
        box: dict[str, Any] = {}
        memory = self.memory  # what the events descend from: see `_envelope`

        def run(tx: Tx) -> Any:
            draft = box["draft"] = self.memory.copy(tx.now).bind(tx)
            value = apply(tx.conn, draft)
            flush_columns(tx.conn, draft)
            box["views"] = self._views(tx.conn, draft)
            return value

        key = WriteCommand(command.command_id, command.actor_id, command.digest, op_id)
        result = await self.path.mutate(key, run, project_id=self.memory.project_id,
                                        correlation_id=command.correlation_id,
                                        envelope=lambda c: commit_cause(c, memory))  # fmt: skip
        if "draft" in box and result.delivery == "new":
            self._adopt(box["draft"], box["views"])
        return result

    def _views(self, conn: sqlite3.Connection, draft: Draft) -> Views:
        """Snapshots of the turns it changed, for turn.wait to answer without a read; for
        an ended turn a waiting turn.send waits on, its first item page too (it answers with
        it, no read; a turn.wait answers with the turn alone, so it asks for none)."""
        cached = draft.views
        views = [cached.get(t) or turn_view(conn, t) for t in draft.touched]
        pages = {}
        notifier = self.ctx.notifier
        for view in views:
            prompt = draft.ended.get(view.turn_id)
            if prompt is not None and notifier.page_wanted(view.turn_id):
                known = draft.ended_items.get(view.turn_id)  # its items, as written here
                pages[view.turn_id] = items_page(conn, view, prompt, 0, known)
        return views, pages

    def _adopt(self, draft: Draft, views: Views) -> None:
        draft.tx = None  # the transaction is over
        self.memory = draft
        for done in draft.on_commit:  # the buffer's marks of what this commit wrote
            done()
        draft.on_commit = []
        self.ctx.notifier.publish(*views)

    def session_target(self, draft: Draft, prior: int) -> None:
        draft.targets.append(
            ReceiptTarget("session", draft.session_id, "updated", prior, draft.revision)
        )

    def session_json(self, conn: sqlite3.Connection, draft: Draft) -> Any:
        flush_columns(conn, draft)  # the row as the transaction leaves it
        return to_json(mutation_session(session_view(conn, draft.session_id, draft.now)))

    # -- the queue's actions ------------------------------------------------------------------

    def apply_rows(self, conn: sqlite3.Connection, draft: Draft, after: q.QueueState,
                   actions: tuple[q.QueueAction, ...]) -> None:  # fmt: skip
        """Write what the queue's actions mean for the rows (before their side effects):
        the pure core's plan (`_core.plan_actions`), then the announced activity. A dispatch
        is an activation in its turn's own correlation (`_envelope.dispatch_context`)."""
        turns = {turn_id: memo.state for turn_id, memo in draft.turns.items()}
        plan = core.plan_actions(draft.state, turns, actions,
                                 wall_time_ms=self.wall_time_limit_ms(),
                                 snapshots=self._snapshots(),
                                 active=after.active is not None)  # fmt: skip
        worker = self.attempt.handle

        def dispatching(turn_id: str) -> AbstractContextManager[None]:
            return dispatch_context(conn, draft, turn_id, worker)

        waiting = draft.state is SessionState.WAITING_APPROVAL
        draft.stage_activity(activity_of(after, waiting))  # written with a Session row of the plan
        apply_plan(conn, draft, plan, dispatching=dispatching)
        set_activity(conn, draft, activity_of(after, draft.state is SessionState.WAITING_APPROVAL))

    def wall_time_limit_ms(self) -> int:
        """A turn's wall-time limit: maxWallTimeMsPerActivation, or the executor's own
        when it is smaller (every kind but echo)."""
        limit = self.config.limits.max_wall_time_ms_per_activation
        own = self.attempt.wall_time_ms
        return limit if own is None else min(limit, own)

    def _snapshots(self) -> dict[str, str]:
        ids = {"userSnapshotId": self.config.user_snapshot_id,
               "projectSnapshotId": self.config.project_snapshot_id}  # fmt: skip
        return {key: value for key, value in ids.items() if value is not None}

    def gone_rows(self, conn: sqlite3.Connection, draft: Draft, expected: bool,
                  actions: tuple[q.QueueAction, ...], *,
                  launch_failed: bool = False) -> None:  # fmt: skip
        """The Session's own rows when its worker is gone (before the queue's rows), as the
        pure core decides them (`_core.gone_events`)."""
        restarting = any(isinstance(a, q.StartWorker) for a in actions)
        for event in core.gone_events(draft.state, expected=expected,
                                      launch_failed=launch_failed,
                                      restarting=restarting):  # fmt: skip
            session_step(conn, draft, event)

    def attach(self, scope: EffectScope) -> None:
        self.effects = scope

    def effect(self, name: str, run: Callable[[], Awaitable[None]]) -> None:
        """Start `run` in this actor's effect scope (after a commit)."""
        if self.effects is None:
            raise RuntimeError(f"session {self.session_id}: no effect scope attached")
        self.effects.start(name, run)

    async def tell_self(self, message: object) -> None:
        """Tell this Session's live actor (from an effect); a refusal is logged: stopping,
        the next incarnation recovers."""
        try:
            await self.ctx.tell(self.session_id, message)
        except (MaiaError, ActorError) as error:
            log.warning("session %s: %s not delivered: %r", self.session_id,
                        type(message).__name__, error)  # fmt: skip

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


def saturated(refused: tuple[str, int]) -> MaiaError:
    """No live-Session slot (maxLiveSessions): the Node's (`node`) or the Project's."""
    scope, limit = refused
    where = "the Node is" if scope == "node" else "this Project is"
    return MaiaError(
        "saturated",
        f"{where} at capacity: {limit} Sessions have a running worker (maxLiveSessions);"
        " retry shortly",
        {"detail": "live Session limit", "limit": limit, "scope": scope},
    )


def new_turn_id() -> str:
    return new_id("turn")
