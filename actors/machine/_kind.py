"""The machine kind: the link board of this Control Node's run, the relay of remote work
(its lease machines and remote worker attempts) and the placing supervisor.

`MACHINES` goes in the Node's kind list after the worker pool and before the Sessions (the
Session kind takes the pool's supervisor at its open); handlers and the machine link reach
its facade, `MachineService`, as `runtime[MACHINES]`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any, Final

import attrs
import trio

from actors import ActorRuntime, TransitionTable, WorkerPool

from ._links import LinkBoard
from ._placing import PlacingSupervisor
from ._relay import MachineRelay


@attrs.define(eq=False)
class MachineService:
    """What handlers and the link share: the links, the relay and the runtime."""

    runtime: ActorRuntime
    relay: MachineRelay
    links: LinkBoard
    listening: tuple[str, int] | None = None  # the Control Node's machine listener
    execution: Any = None  # the Execution Node's link (maia.machines.ExecutionLink)

    @property
    def local_supervisor(self) -> Any:
        """The pool's own supervisor (what an Execution Node spawns its relayed workers on)."""
        supervisor = self.runtime.extension(WorkerPool).supervisor
        return getattr(supervisor, "inner", supervisor)


@attrs.frozen
class MachineKind:
    """The kind the runtime opens (`Kind` protocol)."""

    name: str = "machine"

    @property
    def tables(self) -> Sequence[TransitionTable[Any, Any]]:
        return ()

    @asynccontextmanager
    async def open(self, runtime: ActorRuntime) -> AsyncIterator[MachineService]:
        links = LinkBoard()
        relay = MachineRelay(runtime.store, runtime.clock, links)
        await relay.restore()
        pool = runtime.extension(WorkerPool)
        inner = pool.supervisor
        pool.supervisor = PlacingSupervisor(inner, relay)  # type: ignore[assignment]
        try:
            async with trio.open_nursery() as nursery:
                await nursery.start(relay.run)
                try:
                    yield MachineService(runtime, relay, links)
                finally:
                    nursery.cancel_scope.cancel()
        finally:
            pool.supervisor = inner


MACHINES: Final = MachineKind()
