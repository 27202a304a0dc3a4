"""Worker processes as a runtime service: the supervisor, its epochs and the live slots.

Every kind whose aggregates run a worker process (the Session today; machine assignments
next) shares one `WorkerPool`: the worker supervisor (spawn, heartbeat, fence, bounded
stop), epochs from the storage counter (never reused across Node restarts; the supervisor
issues them one launch at a time), and the live-worker limit (`WorkerSlots`). The `WORKERS`
kind opens it before the kinds that use it (`runtime.extension(WorkerPool)`), and on the
way out stops every worker, bounded, before their kinds' actors stop.

The seam: `options={"worker_supervisor": fake}` runs the pool on an in-process stand-in
with the supervisor's interface (`start_worker`, `live`, `stop_all`, handles with
`prompt`/`interrupt`/`stop`/`wait_initialized`/`wait_stopped`), so kind-level tests run on
`MockClock` without subprocesses, beside the real-process tests.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

import attrs
import trio

from storage import next_worker_epoch
from supervision.workers import WorkerSupervisor, WorkerTimings, open_worker_supervisor

from ._runtime import ActorRuntime
from ._table import TransitionTable

STOP_BOUND_S = 30.0  # interrupt 10 s + terminate 5 s + kill, with room


@attrs.frozen
class StorageEpochSource:
    """Worker epochs from the storage counter: strictly increasing, across restarts."""

    store: Any  # storage.Storage

    async def next_epoch(self) -> int:
        return int(await self.store.write(next_worker_epoch))


class WorkerSlots:
    """The live-worker limit (maxLiveSessions): one slot per aggregate whose worker runs (or
    is starting), counted on the Node and per Project. The limits come with each
    acquisition (the admitted configuration of that moment), `limit` at start."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0
        self.by_project: dict[str, int] = {}
        self.idle: dict[str, None] = {}  # aggregates whose worker waits for work, oldest first
        # aggregates whose work waits for a slot, with the scope of the full limit
        self.waiting: dict[str, tuple[str, int]] = {}
        self.refused: tuple[str, int] = ("node", limit)  # the last refusal's scope and limit

    def wait_for_slot(self, owner: str) -> None:
        self.waiting[owner] = self.refused

    def next_waiting(self) -> str | None:
        """The owner that has waited longest for a slot (taken off the list)."""
        for owner in self.waiting:
            del self.waiting[owner]
            return owner
        return None

    def mark_idle(self, owner: str, idle: bool) -> None:
        if idle:
            self.idle[owner] = None
        else:
            self.idle.pop(owner, None)

    def victim(self, exclude: str) -> str | None:
        """The owner whose idle worker has waited longest (taken off the list)."""
        for owner in self.idle:
            if owner != exclude:
                del self.idle[owner]
                return owner
        return None

    def try_acquire(
        self,
        project_id: str | None = None,
        limit: int | None = None,
        project_limit: int | None = None,
    ) -> bool:
        """Take a slot unless the Node (`limit`, else the starting one) or the Project
        (`project_limit`) is full."""
        if limit is not None:
            self.limit = limit
        if self.used >= self.limit:
            self.refused = ("node", self.limit)
            return False
        in_project = self.by_project.get(project_id, 0) if project_id is not None else 0
        if project_id is not None and project_limit is not None and in_project >= project_limit:
            self.refused = ("project", project_limit)
            return False
        self.used += 1
        if project_id is not None:
            self.by_project[project_id] = in_project + 1
        return True

    def release(self, project_id: str | None = None) -> None:
        self.used = max(0, self.used - 1)
        if project_id is not None and project_id in self.by_project:
            self.by_project[project_id] -= 1
            if not self.by_project[project_id]:
                del self.by_project[project_id]


@attrs.define(eq=False)
class WorkerPool:
    """The shared worker service (see the module)."""

    supervisor: WorkerSupervisor
    slots: WorkerSlots

    def live_workers(self) -> int:
        return len(self.supervisor.live())

    async def stop_all(self, reason: str) -> None:
        """Stop every worker, bounded, even while the caller is cancelled."""
        with trio.move_on_after(STOP_BOUND_S) as scope:
            scope.shield = True
            await self.supervisor.stop_all(reason)


@attrs.frozen
class Workers:
    """The kind that opens the `WorkerPool` (no aggregates of its own)."""

    name: str = "workers"
    tables: Sequence[TransitionTable[Any, Any]] = ()

    @asynccontextmanager
    async def open(self, runtime: ActorRuntime) -> AsyncIterator[WorkerPool]:
        limit = runtime.config.capacity.max_live_sessions
        fake = runtime.options.get("worker_supervisor")
        if fake is not None:  # the seam: kind-level tests on MockClock, no subprocesses
            pool = WorkerPool(fake, WorkerSlots(limit))
            runtime.provide(pool)
            yield pool
            return
        timings = runtime.options.get("worker_timings")
        assert timings is None or isinstance(timings, WorkerTimings)
        # One scope per home (its database): the supervisor sweeps what an earlier Node of
        # this home left behind, even a worker's setsid grandchild after a kill -9.
        scope = os.path.realpath(str(runtime.store.path))  # noqa: ASYNC240 - once, at open
        epochs = StorageEpochSource(runtime.store)
        # The Node's observation stream takes the workers' diagnostics (a DiagnosticsSink).
        diagnostics = runtime.options.get("diagnostics")
        async with open_worker_supervisor(epochs, timings, scope=scope,
                                          diagnostics=diagnostics) as sup:  # fmt: skip
            pool = WorkerPool(sup, WorkerSlots(limit))
            runtime.provide(pool)
            yield pool


WORKERS = Workers()
