"""`session create --machine NAME`: the Session's worker runs on that Execution Node.

The machine must be enrolled (not pending, revoked or recovery-required). After the
Session is created (a replay finds the same Session), it is placed under the assignment of
its Project on that machine, made on first use; the worker launches at its first turn,
through the relay, once the assignment's lease admits placement (spec MN0 item 9).
Every `session.create` comes here; only one that names a machine imports the machine kind
(and opens it to make the Project's assignment: `_kinds`; a Node without machines never
loads them).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Awaitable, Callable
from typing import Any

from actors import ActorError
from maia.core import MaiaError
from storage import MutationResult

from ._context import ServiceContext, not_found
from ._kinds import running_kind


async def create_placed(
    ctx: ServiceContext, params: Any, create: Callable[[], Awaitable[MutationResult]]
) -> MutationResult:
    """`create()`, then the placement `params.machine` asks for. Raises
    `resource_not_found` (no such machine), `invalid_state` (not enrolled)."""
    name = getattr(params, "machine", None)
    if name is None:
        return await create()
    from actors.machine import (
        MACHINES,
        MachineState,
        Place,
        find_assignment,
        get_machine,
        new_assignment,
        place_session,
    )

    record = await ctx.read(lambda c: get_machine(c, name=name))
    if record is None:
        raise not_found("machine", name)
    if record.state is not MachineState.ENROLLED or record.recovery_required:
        state = "recovery_required" if record.recovery_required else record.state.value
        raise MaiaError("invalid_state", f"machine {name} is {state}",
                        {"resource": "machine", "id": name, "state": state})  # fmt: skip
    result = await create()
    session_id = result.result["session"]["sessionId"]
    project_id = result.result["session"]["projectId"]
    now = ctx.now()
    row = await ctx.read(lambda c: find_assignment(c, record.machine_id, project_id))
    if row is None:  # its actor creates it (the `place` transition)
        service = await running_kind(ctx.runtime, MACHINES)
        made = new_assignment(record.machine_id, project_id, now)
        try:
            row = await service.assignments.ask(made.assignment_id,
                                                Place(made, record.registration))  # fmt: skip
        except (MaiaError, ActorError):  # another create of this Project made it first
            row = await ctx.read(lambda c: find_assignment(c, record.machine_id, project_id))
            if row is None:
                raise
    assert row is not None
    placed = row

    def place(conn: sqlite3.Connection) -> None:
        place_session(conn, session_id, placed.assignment_id, now)

    await ctx.store.write(place)
    return result
