"""The routine scheduler's identity and allow-list (spec: Scheduled Session operations).

The scheduler acts as the Node's automation, `actor_node-automation_routine-scheduler_<id>`
(no credential, one ID per routine), so its receipts never name the local user. It may
workspace.list and session.create in its fire's Project, creating with only a Workspace,
executor or connectionId, and model; then session.show, session.start, session.stop and
turn.send on its fire's own Session. Anything else is `role_denied`. This Node has no
workspace.list or session.start operation (a turn.send starts the Session's worker), so
those two are allowed and answer `command_not_implemented`.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from typing import Any, Final

import trio

from actors.routine import (
    FailReason,
    FireRow,
    RoutineRow,
    create_command_id,
    scheduler_actor,
    send_command_id,
)
from maia.core import MaiaError
from maia.protocol import REGISTRY, decode_input

from ._context import ServiceContext
from ._sessions import session_create, session_show, session_stop
from ._turns import turn_send

ALLOWED: Final = frozenset(
    {"workspace.list", "session.create", "session.show", "session.start", "session.stop",
     "turn.send"}
)  # fmt: skip
ON_OWN_SESSION: Final = frozenset({"session.show", "session.start", "session.stop", "turn.send"})
SERVED: Final[dict[str, Callable[[ServiceContext, Any], Awaitable[Any]]]] = {
    "session.create": session_create,
    "session.show": session_show,
    "session.stop": session_stop,
    "turn.send": turn_send,
}
# session.create fields beyond these are refused: "only a Workspace, executor or
# connectionId, and model" (this Node's Sessions name a Project and an executor).
CREATE_FIELDS: Final = frozenset({"commandId", "projectId", "executor"})


def _usable_directory(path: str) -> bool:
    """A directory the Node may enter and read (a worker starts there)."""
    return os.path.isdir(path) and os.access(path, os.R_OK | os.X_OK)


def _denied(actor: str, op_id: str, why: str) -> MaiaError:
    return MaiaError(
        "role_denied",
        f"{actor} may not call {op_id}: {why}",
        {"role": actor, "method": op_id},
    )


def authorize(actor: str, op_id: str, body: dict[str, Any], *, project_id: str,
              session_id: str | None) -> None:  # fmt: skip
    """Raise `role_denied` unless the scheduler `actor` may call `op_id` with `body`."""
    if op_id not in ALLOWED:
        raise _denied(actor, op_id, "not an operation the routine scheduler may call")
    if op_id == "session.create":
        if body.get("projectId") != project_id:
            raise _denied(actor, op_id, "only in its fire's Project")
        extra = sorted(set(body) - CREATE_FIELDS)
        if extra:
            raise _denied(actor, op_id, f"creating with {', '.join(extra)} is not allowed")
    if op_id in ON_OWN_SESSION and (session_id is None or body.get("sessionId") != session_id):
        raise _denied(actor, op_id, "only on its fire's own Session")


class SchedulerGate:
    """The `Launcher` the routine scheduler uses: each call as the routine's scheduler."""

    def __init__(self, ctx: ServiceContext) -> None:
        self.ctx = ctx

    async def call(self, routine_id: str, op_id: str, body: dict[str, Any], *,
                   project_id: str, session_id: str | None,
                   correlation_id: str | None = None) -> Any:  # fmt: skip
        """Call `op_id` as the routine's scheduler (its events correlated with
        `correlation_id`: the fire's). Raises `role_denied` outside the allow-list, and
        whatever the operation raises."""
        actor = scheduler_actor(routine_id)
        authorize(actor, op_id, body, project_id=project_id, session_id=session_id)
        handler = SERVED.get(op_id)
        descriptor = REGISTRY.get(op_id)
        if handler is None or descriptor is None:
            raise MaiaError("command_not_implemented", f"{op_id} is not served by this Node",
                            {"method": op_id})  # fmt: skip
        ctx = self.ctx.as_actor(actor, correlation_id)
        return await handler(ctx, decode_input(descriptor, body))

    async def _workspace(self, project_id: str) -> None:
        """Raises `configuration_invalid` (details.reason workspace_unavailable: the fire's
        reason, `reason_of`) when the Project's folder is missing or not usable: a Session
        there could run no turn, so none is created."""

        def root_of(conn: Any) -> str | None:
            row = conn.execute("SELECT root FROM projects WHERE project_id = ?",
                               (project_id,)).fetchone()  # fmt: skip
            return None if row is None else str(row[0])

        root = await self.ctx.read(root_of)
        if root is None:
            return  # session.create answers resource_not_found for it
        usable = await trio.to_thread.run_sync(_usable_directory, root)
        if not usable:
            raise MaiaError(
                "configuration_invalid",
                f"the folder of Project {project_id} is missing or not usable: {root}",
                {"path": "template.projectId", "reason": FailReason.WORKSPACE_UNAVAILABLE.value},
            )

    async def create_session(self, routine: RoutineRow, fire: FireRow) -> str:
        await self._workspace(routine.project_id)
        body = {"commandId": create_command_id(fire.fire_id), "projectId": routine.project_id,
                "executor": routine.executor}  # fmt: skip
        out = await self.call(routine.routine_id, "session.create", body,
                              project_id=routine.project_id, session_id=None,
                              correlation_id=fire.fire_id)  # fmt: skip
        return str(out.session.session_id)

    async def send_turn(self, routine: RoutineRow, fire: FireRow, session_id: str) -> str:
        body = {"commandId": send_command_id(fire.fire_id), "sessionId": session_id,
                "text": routine.prompt}  # fmt: skip
        out = await self.call(routine.routine_id, "turn.send", body,
                              project_id=routine.project_id, session_id=session_id,
                              correlation_id=fire.fire_id)  # fmt: skip
        return str(out.turn.turn_id)

    async def stop_session(self, routine_id: str, session_id: str, revision: int) -> None:
        def project(conn: Any) -> str:
            row = conn.execute("SELECT project_id FROM routines WHERE routine_id = ?",
                               (routine_id,)).fetchone()  # fmt: skip
            return str(row[0]) if row else ""

        body = {"commandId": f"{session_id}.stop.{revision}", "sessionId": session_id,
                "expectedRevision": revision}  # fmt: skip
        await self.call(routine_id, "session.stop", body,
                        project_id=await self.ctx.read(project), session_id=session_id)  # fmt: skip
