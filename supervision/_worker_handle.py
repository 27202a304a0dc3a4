"""One live worker attempt, as the Session actor sees it.

A Session actor uses a handle like this:

    handle = await supervisor.start_worker(spec)        # spawned; new attempt and epoch
    await handle.wait_initialized()                      # or WorkerFailed (fenced / exited)
    async for event in handle.prompt(turn_id, text):     # started, delta…, then one end:
        ...                                              # completed | failed | interrupted | lost
    await handle.interrupt(turn_id)                      # bounded: escalates to stop()
    info = await handle.stop("session stopped")          # bounded: interrupt → TERM → KILL
    handle.statistics()                                  # state, attempt, epoch, heartbeat age

A consumer that may stop before the final event wraps the iterator in
`contextlib.aclosing(...)`: the handle then acknowledges the rest so the worker can finish
the abandoned turn (the handle stays busy until it does; `wait_turn_ended` waits for it).
`lost` means the worker died or was fenced mid-turn: the turn's outcome is uncertain, and
the actor must not assume it ran or did not run. One turn at a time; `prompt` raises
`MaiaError(invalid_state)` otherwise. Events are acknowledged as the actor consumes them,
so a slow actor slows the worker (the 256-frame window), never the reader: heartbeats are
read and counted however slow the actor is. Every wait is bounded by `WorkerTimings`.

This module is the facade; the handle is built in layers, one module each: its state
(`_worker_core`), its lifetime (`_worker_fencing`), its frames (`_worker_frames`) and its
turns (`_worker_turns`).
"""

from __future__ import annotations

import trio

from ._worker_turns import _HandleTurns
from ._worker_types import ExitInfo, WorkerFailed, WorkerStatistics


class WorkerHandle(_HandleTurns):
    """A spawned worker attempt. Built by `WorkerSupervisor.start_worker`."""

    # -- lifecycle (the supervisor calls this) ----------------------------------------

    def start_tasks(self, nursery: trio.Nursery) -> None:
        self._nursery = nursery
        nursery.start_soon(self._read_frames)
        nursery.start_soon(self._read_stderr)
        nursery.start_soon(self._watch)
        nursery.start_soon(self._wait_exit)

    # -- the Session actor's API (the turns: see `_worker_turns`) ---------------------

    async def wait_initialized(self) -> None:
        """Wait for `initialized` (bounded by the init bound: the watchdog fences after).

        Raises `WorkerFailed` when the worker was fenced or exited instead."""
        bound = (self.timings.init_ms + self.timings.kill_wait_ms) / 1000
        with trio.move_on_after(bound):
            await self._settled.wait()
        if not self._initialized.is_set() or self._stopping:
            raise WorkerFailed(self._why("before it was initialized"), self.exit_info)

    async def stop(self, reason: str = "stop") -> ExitInfo:
        """Stop boundedly: interrupt and shutdown (interrupt bound), SIGTERM then SIGCONT
        to the group (terminate bound), SIGKILL to the group; then sweep descendants.

        Runs to the end even when the caller is being cancelled (the cancel lands at the
        caller's next checkpoint): a Node shutting down must still stop its workers, and
        every wait in the stop is bounded (`WorkerTimings.stop_bound_ms` in all). Raises
        `WorkerFailed` only if a stop begun elsewhere did not end within that bound."""
        # The stop runs in the caller's own task, not started in the supervisor's nursery:
        # that nursery may already be cancelled (an outer cancel) and the caller's wait for
        # it would then be cut off. `_stop` shields itself before its first checkpoint.
        if self._mark_stopping():
            await self._stop(True, reason)
        else:  # begun by a fence, an exit or another stop: wait for it, shielded and bounded
            with trio.CancelScope(shield=True):
                with trio.move_on_after(self.timings.stop_bound_ms / 1000):
                    await self._stopped.wait()
        if self.exit_info is None:
            bound = self.timings.stop_bound_ms
            raise WorkerFailed(f"worker {self.attempt_id} did not stop within {bound} ms")
        return self.exit_info

    async def wait_stopped(self) -> ExitInfo:
        """Wait until the attempt has fully ended (after a fence, crash or stop)."""
        await self._stopped.wait()
        assert self.exit_info is not None
        return self.exit_info

    def statistics(self) -> WorkerStatistics:
        return WorkerStatistics(
            attempt_id=self.attempt_id,
            epoch=self.epoch,
            pid=self.pid,
            state=self.state,
            heartbeat_age_ms=int((trio.current_time() - self._last_beat) * 1000),
            turns=self._turns,
            events=self._events,
            diagnostics_received=self.diagnostics_received,
            diagnostics_dropped=self.diagnostics_dropped,
            fence_reason=self.fence_reason,
        )
