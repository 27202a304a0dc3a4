"""The worker supervisor: launches attempts and owns their tasks until they end.

Each `start_worker` is a new attempt: a fresh attempt ID, an epoch from the injected
`EpochSource` that must be strictly greater than every epoch this supervisor has seen (a
source that goes back is our bug and raises; epochs are issued one launch at a time, so
overlapping launches cannot register them out of order), a new session and process group,
the filtered environment. The supervisor's nursery runs each handle's reader, stderr reader,
watchdog and stopper; leaving `open_worker_supervisor` stops every live worker boundedly.

A supervisor given a `scope` (the Node passes its home: one scope per home) marks every
worker with `MAIA_WORKER_SCOPE`, and sweeps the scope's strays — processes carrying the
marker of an attempt that is not live, such as the `setsid` grandchild of a worker whose
Node was killed with SIGKILL — when it opens and again when it closes. Without a scope it
sweeps nothing beyond its own workers' trees (tests run many supervisors side by side).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from subprocess import PIPE

import trio

from maia.core import MaiaError, new_id
from worker_bridge import NODE, Connection, TrioFrameStream

from ._process_group import become_subreaper, release_subreaper, sweep_strays
from ._worker_config import EpochSource, WorkerSpec, WorkerTimings
from ._worker_handle import WorkerHandle
from ._worker_json import decode_frame, encode_frame
from ._worker_types import DiagnosticsSink, WorkerFailed, WorkerState


class WorkerSupervisor:
    """Spawns and tracks worker attempts. Use `open_worker_supervisor`."""

    def __init__(
        self,
        nursery: trio.Nursery,
        epochs: EpochSource,
        timings: WorkerTimings,
        scope: str | None = None,
        diagnostics: DiagnosticsSink | None = None,
    ) -> None:
        self._nursery = nursery
        self.diagnostics = diagnostics  # every attempt's observation-batches go here
        self._epochs = epochs
        self.timings = timings
        self.scope = scope
        self.strays_swept: list[int] = []  # pids of earlier runs' leftovers killed
        self._highest_epoch = 0
        self._epoch_lock = trio.Lock()
        self.handles: dict[str, WorkerHandle] = {}
        self.subreaper = become_subreaper()

    async def start_worker(self, spec: WorkerSpec) -> WorkerHandle:
        """Spawn one attempt of `spec`. Returns before `initialized`: call
        `handle.wait_initialized()`. Raises `MaiaError(configuration_invalid)` for a bad
        spec, `MaiaError(unavailable)` when the process cannot start."""
        spec.check()
        # Issue and register the epoch under one lock. Overlapping launches would otherwise
        # await the source together, and a source may answer them in any order (a storage
        # group commit does): the later-issued epoch could register first and the earlier one
        # be refused as "went back". Serialized, the check is exact per launch, and only the
        # epoch's issue waits in line, not the spawn.
        async with self._epoch_lock:
            epoch = await self._epochs.next_epoch()
            if epoch <= self._highest_epoch:
                raise RuntimeError(f"epoch source went back: {epoch} after {self._highest_epoch}")
            self._highest_epoch = epoch
        attempt_id = new_id("attempt")
        env = spec.environment(
            epoch=epoch, attempt_id=attempt_id, heartbeat_ms=self.timings.heartbeat_ms,
            scope=self.scope,
        )  # fmt: skip
        try:
            process = await trio.lowlevel.open_process(
                list(spec.argv),
                stdin=PIPE,
                stdout=PIPE,
                stderr=PIPE,
                cwd=spec.cwd,
                env=env,
                start_new_session=True,
            )
        except OSError as exc:
            raise MaiaError(
                "unavailable", f"worker {spec.argv[0]} could not start: {exc}", {"target": "worker"}
            ) from exc
        assert process.stdin is not None
        assert process.stdout is not None
        stream = TrioFrameStream(
            Connection(NODE, epoch=epoch, encoder=encode_frame, decoder=decode_frame),
            process.stdin,
            process.stdout,
        )
        stream.write_bound_s = self.timings.interrupt_ms / 1000  # writes whole, bounded
        handle = WorkerHandle(
            spec=spec,
            timings=self.timings,
            process=process,
            stream=stream,
            attempt_id=attempt_id,
            epoch=epoch,
            diagnostics=self.diagnostics,
        )
        self.handles[attempt_id] = handle
        handle.start_tasks(self._nursery)
        self._nursery.start_soon(self._forget, handle)
        return handle

    async def _forget(self, handle: WorkerHandle) -> None:
        await handle.wait_stopped()
        self.handles.pop(handle.attempt_id, None)

    def live(self) -> list[WorkerHandle]:
        return [h for h in self.handles.values() if h.state is not WorkerState.EXITED]

    async def stop_all(self, reason: str = "supervisor stopping") -> None:
        """Stop every live worker at once, bounded by the stop bounds. Completes even when
        the caller is being cancelled: each `handle.stop` runs to its (bounded) end."""
        async with trio.open_nursery() as nursery:
            for handle in self.live():
                nursery.start_soon(self._stop_quietly, handle, reason)

    async def sweep_strays(self) -> list[int]:
        """Kill this scope's processes whose attempt is not live (see the module docstring);
        returns their pids (also added to `strays_swept`). Nothing without a scope."""
        if self.scope is None:
            return []
        live = frozenset(h.attempt_id for h in self.live())
        wait_s = self.timings.kill_wait_ms / 1000
        killed = await trio.to_thread.run_sync(sweep_strays, self.scope, live, wait_s)
        self.strays_swept.extend(killed)
        return killed

    @staticmethod
    async def _stop_quietly(handle: WorkerHandle, reason: str) -> None:
        with contextlib.suppress(WorkerFailed):  # past its bound: its exit info says so
            await handle.stop(reason)


@asynccontextmanager
async def open_worker_supervisor(
    epochs: EpochSource,
    timings: WorkerTimings | None = None,
    *,
    scope: str | None = None,
    diagnostics: DiagnosticsSink | None = None,
) -> AsyncIterator[WorkerSupervisor]:
    """A worker supervisor for the block; on exit every worker is stopped (bounded). With a
    `scope`, the scope's strays are swept before the block and after the stop; `diagnostics`
    gets every attempt's observation-batches."""
    async with trio.open_nursery() as nursery:
        supervisor = WorkerSupervisor(
            nursery, epochs, timings or WorkerTimings(), scope, diagnostics
        )
        try:
            await supervisor.sweep_strays()
            yield supervisor
        finally:
            with trio.CancelScope(shield=True):
                await supervisor.stop_all()
                await supervisor.sweep_strays()
            nursery.cancel_scope.cancel()
            if supervisor.subreaper:
                release_subreaper()


async def serve_worker_supervisor(
    epochs: EpochSource,
    timings: WorkerTimings | None = None,
    *,
    scope: str | None = None,
    task_status: trio.TaskStatus[WorkerSupervisor] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Run a worker supervisor until cancelled (for a supervisor tree:
    `supervisor = await nursery.start(serve_worker_supervisor, epochs)`). On cancellation
    every worker is stopped within the stop bounds."""
    async with open_worker_supervisor(epochs, timings, scope=scope) as supervisor:
        task_status.started(supervisor)
        await trio.sleep_forever()
