"""`session create --machine NAME`: the Session's worker runs on that Execution Node.

The machine must be enrolled (not pending, revoked or recovery-required). After the
Session is created (a replay finds the same Session), it is placed under the assignment of
its Project on that machine, made on first use; the worker launches at its first turn,
through the relay, once the assignment's lease admits placement (spec MN0 item 9).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Awaitable, Callable
from typing import Any

from actors.machine import (
    MACHINES,
    AssignmentRow,
    MachineService,
    MachineState,
    assignment_for,
    get_machine,
    place_session,
)
from maia.core import MaiaError
from storage import MutationResult

from ._context import ServiceContext, not_found


async def create_placed(
    ctx: ServiceContext, params: Any, create: Callable[[], Awaitable[MutationResult]]
) -> MutationResult:
    """`create()`, then the placement `params.machine` asks for. Raises
    `resource_not_found` (no such machine), `invalid_state` (not enrolled)."""
    name = getattr(params, "machine", None)
    if name is None:
        return await create()
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

    def place(conn: sqlite3.Connection) -> AssignmentRow:
        row = assignment_for(conn, record.machine_id, project_id, now)
        place_session(conn, session_id, row.assignment_id, now)
        return row

    row = await ctx.store.write(place)
    service: MachineService = ctx.runtime[MACHINES]
    service.relay.leases.add(row, record.registration)
    return result
