"""The machine kind: the link board of this Control Node's run, the registry of
`MachineAssignmentActor`s (one per assignment), the relay of remote work (the frames of
each link, the remote worker attempts) and the placing supervisor.

`MACHINES` goes in the Node's kind list after the worker pool and before the Sessions (the
Session kind takes the pool's supervisor at its open); handlers and the machine link reach
its facade, `MachineService`, as `runtime[MACHINES]`. Opening it, at a Control start:
  1. applies the assignment table's recovery column (`restart`, one write): every
     assignment keeps its state and stores the barrier it now stands behind;
  2. starts the registry (its durable timers routed to it) and tells every assignment
     `Restarted`: its actor rebuilds its lease machine behind the barrier and arms its
     timers; no work is placed under it until a running report confirms a newer grant.
"""

from __future__ import annotations

import logging
import math
import sqlite3
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any, Final

import attrs
import trio

from actors import (
    ActorError,
    ActorRegistry,
    ActorRuntime,
    AggregateKindHandle,
    Edge,
    TransitionTable,
    WorkerPool,
)
from actors._runtime import recover
from maia.core import MaiaError

from ._assignment_actor import MachineAssignmentActor
from ._assignment_core import restart_barrier
from ._assignment_messages import AssignmentContext, AssignmentMessage, Restarted
from ._assignment_table import ASSIGNMENT_TABLE
from ._assignments import ASSIGNMENT_ROWS, AssignmentRow, all_assignments, assignments_in
from ._links import LinkBoard
from ._placing import PlacingSupervisor
from ._relay import MachineRelay

log = logging.getLogger("maia.machines")
ASSIGNMENTS: Final = "machine"  # the registry's name (and its timers' kind): the kind's
EDGES: Final = (
    Edge("api", "machine", "ask", ("Place",), "mailbox 64, deadline 4.5 s"),
    Edge("machine link", "machine", "ask", ("LeaseRequest", "Status"),
         "mailbox 64, deadline 4.5 s"),
    Edge("machine", "storage", "ask", ("write", "read"), "mailbox 4096, admission 5 s"),
    Edge("machine", "machine link", "send", ("launch_assignment",), "bounded 10 s"),
)  # fmt: skip


@attrs.define(eq=False)
class MachineService:
    """What handlers and the link share: the links, the relay, the assignment actors."""

    runtime: ActorRuntime
    relay: MachineRelay
    links: LinkBoard
    assignments: AggregateKindHandle[AssignmentMessage]
    listening: tuple[str, int] | None = None  # the Control Node's machine listener
    execution: Any = None  # the Execution Node's link (maia.machines.ExecutionLink)

    @property
    def local_supervisor(self) -> Any:
        """The pool's own supervisor (what an Execution Node spawns its relayed workers on)."""
        supervisor = self.runtime.extension(WorkerPool).supervisor
        return getattr(supervisor, "inner", supervisor)


def _behind_barrier(conn: sqlite3.Connection, states: Sequence[str]) -> list[AssignmentRow]:
    """The rows the recovery column moves, each carrying the barrier it will store."""
    return [attrs.evolve(row, barrier=restart_barrier(row)) for row in assignments_in(conn, states)]


@attrs.frozen
class MachineKind:
    """The kind the runtime opens (`Kind` protocol)."""

    name: str = ASSIGNMENTS
    edges: Sequence[Edge] = EDGES

    @property
    def tables(self) -> Sequence[TransitionTable[Any, Any]]:
        return (ASSIGNMENT_TABLE,)

    @asynccontextmanager
    async def open(self, runtime: ActorRuntime) -> AsyncIterator[MachineService]:
        store = runtime.store
        links = LinkBoard()
        relay = MachineRelay(store, runtime.clock, links)
        await relay.recovered.load()  # attempts an earlier run left live on machines
        await recover(runtime, ASSIGNMENTS, ASSIGNMENT_TABLE, ASSIGNMENT_ROWS, _behind_barrier)
        rows = await store.read(all_assignments)
        if rows:  # a Control start with assignments: the barrier's discontinuity
            relay.trace.emit("discontinuity", cause="control_restarted")
        ctx = AssignmentContext(store, relay.leases, relay.send, relay.trace, store.node_id,
                                relay.ledger.taken_through, relay.expire, relay.holds)  # fmt: skip

        async def spawn(assignment_id: str) -> MachineAssignmentActor:
            return MachineAssignmentActor(ctx, runtime.write_path(ASSIGNMENTS, assignment_id),
                                          assignment_id)  # fmt: skip

        pool = runtime.extension(WorkerPool)
        inner = pool.supervisor
        pool.supervisor = PlacingSupervisor(inner, relay)  # type: ignore[assignment]
        try:
            async with trio.open_nursery() as nursery:
                registry: ActorRegistry[AssignmentMessage, Any] = await runtime.start_registry(
                    ASSIGNMENTS, spawn, nursery=nursery, restart_message=Restarted,
                    idle_s=math.inf,
                )  # fmt: skip
                relay.assignments = registry
                for row in rows:
                    await _wake(registry, row.assignment_id)
                try:
                    yield MachineService(runtime, relay, links,
                                         AggregateKindHandle(ASSIGNMENTS, registry))  # fmt: skip
                finally:
                    nursery.cancel_scope.cancel()
        finally:
            pool.supervisor = inner


async def _wake(registry: Any, assignment_id: str) -> None:
    """Rebuild the assignment now, so placement and the link see its barrier at once."""
    try:
        await registry.ask(assignment_id, Restarted(), within=10.0)
    except (MaiaError, ActorError):  # it rebuilds on its next message instead
        log.warning("assignment %s not rebuilt at start", assignment_id, exc_info=True)


MACHINES: Final = MachineKind()
