"""`session.create` as a transition of the Session's own actor.

The service picks the new Session's ID and asks its actor (`SessionRuntime.create`); the
registry spawns an `UnbornSession` for an ID being created (and refuses any other unknown
ID with `resource_not_found`). It applies the Session table's creation row through the one
write path (the row, `session.created` and the receipt in one transaction; a retried
command gets its stored result), then becomes the Session's actor for every later message.

The Session's actor is built (rehydrated from the row just written) at that later message,
not at the creation: a Session created and never used stays this small object until its
idle passivation, so a burst of creations does not hold a full Session actor each (the
Node's memory: docs/performance.md).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import attrs

from actors._actor import Envelope
from actors._effects import EffectScope
from actors._table import CLIENT
from actors._write import Change, Write, WritePath
from actors._write import Command as WriteCommand
from maia.core import MaiaError, to_json
from storage import MutationResult

from ._lifecycles import SESSION_TABLE, SessionEvent
from ._messages import Command, Message, SessionContext
from ._sql import SESSION_ROWS, SessionRecord
from ._views import mutation_session, session_view


@attrs.frozen
class CreateSession:
    command: Command
    project_id: str
    executor: str
    cwd: str
    title: str | None
    labels: str  # JSON object of label -> value


def _not_found(session_id: str) -> MaiaError:
    return MaiaError("resource_not_found", f"session {session_id} does not exist",
                     {"resource": "session", "id": session_id})  # fmt: skip


class UnbornSession:
    """The actor of a Session being created: `CreateSession`, then the Session itself."""

    def __init__(self, ctx: SessionContext, session_id: str, path: WritePath,
                 born: Callable[[], Awaitable[Any]]) -> None:  # fmt: skip
        self.ctx = ctx
        self.session_id = session_id
        self.path = path
        self._born = born  # rehydrates the Session actor once its row exists
        self.actor: Any = None
        self.born = False  # its row is committed; `actor` is built at the next message
        self.scope: EffectScope | None = None

    def attach(self, scope: EffectScope) -> None:
        self.scope = scope

    async def handle_batch(self, envelopes: list[Envelope[Message | CreateSession]]) -> None:
        for index, envelope in enumerate(envelopes):
            if self.born:
                if self.actor is None:
                    self.actor = await self._born()
                    if self.scope is not None:
                        self.actor.attach(self.scope)
                await self.actor.handle_batch(envelopes[index:])
                return
            message = envelope.message
            if not isinstance(message, CreateSession):
                envelope.refuse(_not_found(self.session_id))
                continue
            try:
                result = await self.create(message)
            except MaiaError as refusal:
                envelope.refuse(refusal)
                continue
            envelope.resolve(result)

    async def create(self, message: CreateSession) -> MutationResult:
        command = message.command
        session_id = self.session_id
        record = SessionRecord(session_id, message.project_id, message.executor, message.cwd,
                               message.title, message.labels)  # fmt: skip
        now = self.ctx.clock.wall_ms()

        def result(conn: Any, _: tuple[Any, ...]) -> Any:
            return {"session": to_json(mutation_session(session_view(conn, session_id, now)))}

        committed = await self.path.commit(Write(
            changes=(Change(SESSION_ROWS, SESSION_TABLE, None, record, (SessionEvent.CREATE,),
                            CLIENT, event_actor=command.actor_id),),
            command=WriteCommand(command.command_id, command.actor_id, command.digest,
                                 "session.create"),
            result=result,
            correlation_id=command.correlation_id,
        ))  # fmt: skip
        assert committed.mutation is not None
        if committed.applied:
            self.born = True
        return committed.mutation
