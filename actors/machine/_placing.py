"""The worker supervisor the Session kind sees once machines are open: a Session placed on a
machine (`machine_placements`) gets a `RemoteWorkerHandle` through the relay; every other
Session the local supervisor's handle, unchanged.

Installed by the machine kind into the shared `WorkerPool` before the Session kind opens,
so the Session actor keeps its lifecycle and only its worker's transport differs.
"""

from __future__ import annotations

import contextlib
from typing import Any

import trio

from supervision.workers import WorkerSpec

from ._assignments import placement_of
from ._relay import MachineRelay

STOP_REMOTE_S = 25.0


class PlacingSupervisor:
    """Routes `start_worker` by placement; everything else is the local supervisor's."""

    def __init__(self, inner: Any, relay: MachineRelay) -> None:
        self.inner = inner
        self.relay = relay

    async def start_worker(self, spec: WorkerSpec) -> Any:
        session_id = spec.activation.get("sessionId")
        assignment = None
        if isinstance(session_id, str):
            assignment = await self.relay.store.read(lambda c: placement_of(c, session_id))
        if assignment is None:
            return await self.inner.start_worker(spec)
        return await self.relay.start_remote(assignment, spec)

    def live(self) -> list[Any]:
        return [*self.inner.live(), *(entry[2] for entry in self.relay.handles.values())]

    async def stop_all(self, reason: str = "supervisor stopping") -> None:
        """Local workers as before; remote ones asked to stop, bounded (a link that is
        down leaves them to their lease: the Execution Node stops them at its deadline)."""
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self.inner.stop_all, reason)
            for _, _, handle in list(self.relay.handles.values()):
                nursery.start_soon(self._stop_remote, handle, reason)

    async def _stop_remote(self, handle: Any, reason: str) -> None:
        with trio.move_on_after(STOP_REMOTE_S):
            with contextlib.suppress(Exception):
                await handle.stop(reason)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)
