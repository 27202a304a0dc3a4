"""The lifetime of one worker attempt: the watchdog, the fence, the exit and the bounded stop.

A worker is trusted only while it answers: the watchdog fences it at the init bound or after
the missed-heartbeat bound, a fence or an exit begins the one stop of the attempt, and the
stop (interrupt and shutdown, then TERM, then KILL, then a sweep) runs shielded with every
wait bounded, then records the `ExitInfo` and ends a running turn as `lost`.
"""

from __future__ import annotations

import contextlib

import trio

from worker_bridge import Interrupt, ProtocolError, Shutdown

from ._worker_core import _HandleCore
from ._worker_stop import stop_process_tree
from ._worker_types import ExitInfo, TurnEvent, WorkerState


class _HandleLifetime(_HandleCore):
    """Fencing, the watchdog and the stop of a `WorkerHandle`."""

    def fence(self, reason: str) -> None:
        """Stop trusting the worker: no more frames are read, and it is stopped at once."""
        if self.fence_reason is None and not self._exited.is_set():
            self.fence_reason = reason
        self._begin_stop(graceful=False, reason=None)

    def _begin_stop(self, *, graceful: bool, reason: str | None) -> None:
        """Start the stop in the supervisor's nursery (from sync code: a fence, an exit)."""
        if self._mark_stopping():
            assert self._nursery is not None
            self._nursery.start_soon(self._stop, graceful, reason)

    def _mark_stopping(self) -> bool:
        """Claim the one stop of this attempt; False if it was claimed already."""
        if self._stopping:
            return False
        self._stopping = True
        self._settled.set()
        self.state = WorkerState.STOPPING
        return True

    async def _send_in_stop(self, frame: Interrupt | Shutdown) -> None:
        """Unshielded, so the stop's interrupt bound cuts it short: a frame cut off there
        only ends the graceful phase, which the stop is leaving anyway."""
        with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError, ProtocolError):
            await self.stream.send(frame)

    async def _read_stderr(self) -> None:
        assert self.process.stderr is not None
        try:
            while data := await self.process.stderr.receive_some(65536):
                self.stderr.append(bytes(data))
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            return
        finally:
            self._stderr_done.set()

    async def _watch(self) -> None:
        """Fence at the init bound, or after the missed-heartbeat bound."""
        init_deadline = self._spawned_at + self.timings.init_ms / 1000
        while not self._stopping and not self._exited.is_set():
            if not self._initialized.is_set():
                if trio.current_time() >= init_deadline:
                    self.fence(f"no initialized within {self.timings.init_ms} ms")
                    return
                deadline = init_deadline
            else:
                deadline = self._last_beat + self.timings.heartbeat_deadline_ms / 1000
                if trio.current_time() >= deadline:
                    self.fence(
                        f"{self.timings.missed_heartbeats} heartbeats missed "
                        f"({self.timings.heartbeat_ms} ms each)"
                    )
                    return
            with trio.move_on_at(deadline):
                if self._initialized.is_set():
                    await self._exited.wait()
                else:
                    await self._settled.wait()  # wakes at `initialized` to watch heartbeats

    async def _wait_exit(self) -> None:
        await self.process.wait()
        self._exited.set()
        if not self._stopping:
            self._begin_stop(graceful=False, reason=None)  # crashed or left: clean up after it

    async def _stop(self, graceful: bool, reason: str | None) -> None:
        try:
            with trio.CancelScope(shield=True):  # every wait inside is bounded
                await self._stop_phases(graceful, reason)
        finally:
            self.state = WorkerState.EXITED
            self._stopped.set()

    async def _stop_phases(self, graceful: bool, reason: str | None) -> None:
        async def ask_to_stop() -> None:
            if self._turn_id is not None:
                await self._send_in_stop(Interrupt(turn_id=self._turn_id))
            await self._send_in_stop(Shutdown(reason=(reason or "stop")[:200]))

        phase, swept = await stop_process_tree(
            process=self.process,
            attempt_id=self.attempt_id,
            timings=self.timings,
            ask=ask_to_stop if graceful else None,
        )
        with trio.move_on_after(1):
            await self.stream.aclose()
            if self.process.stdout is not None:
                await self.process.stdout.aclose()
        returncode = self.process.returncode
        self.exit_info = ExitInfo(
            returncode=returncode if returncode is None or returncode >= 0 else None,
            signal=-returncode if returncode is not None and returncode < 0 else None,
            fence_reason=self.fence_reason,
            stop_phase=phase,
            swept=swept,
            stderr_tail=self.stderr.text(),
        )
        if self._turn_id is not None:
            self._end_turn(TurnEvent(self._turn_id, "lost", self._why("during the turn")))
