"""The state one worker attempt shares between its parts, and how a turn ends.

`WorkerHandle` is built in layers (this state, the attempt's lifetime, the frames, the
turns, the facade), each its own module so each stays small; they all read and write the
attributes set up here. Ending a turn lives here because every layer ends turns: the reader
at a final event, the stop when the worker is gone, the turn itself when withdrawn.
"""

from __future__ import annotations

import contextlib
from collections import deque
from typing import Any

import trio

from worker_bridge import Hello, TrioFrameStream

from ._process_group import StderrRing
from ._turn_events import TurnEventQueue
from ._worker_config import WorkerSpec, WorkerTimings
from ._worker_types import DiagnosticsSink, ExitInfo, TurnEvent, WorkerState

ACK_EVERY = 128  # consumed events between acks while more wait (half the window)
DIAGNOSTICS_KEPT = 256
WHY_STDERR_CHARS = 2048  # of stderr, in the message of a turn the worker lost
EXIT_SETTLE_S = 1.0  # how long a lost turn waits for the worker's exit status


class _HandleCore:
    """The attempt's state; see `WorkerHandle` for the API built on it."""

    def __init__(
        self,
        *,
        spec: WorkerSpec,
        timings: WorkerTimings,
        process: trio.Process,
        stream: TrioFrameStream,
        attempt_id: str,
        epoch: int,
        diagnostics: DiagnosticsSink | None = None,
    ) -> None:
        self.spec = spec
        self.diagnostics_sink = diagnostics  # the Node's observation stream, if any
        self.timings = timings
        self.process = process
        self.stream = stream
        self.attempt_id = attempt_id
        self.epoch = epoch
        self.pid = process.pid
        self.state = WorkerState.STARTING
        self.fence_reason: str | None = None
        self.stderr = StderrRing()
        self.diagnostics: deque[dict[str, Any]] = deque(maxlen=DIAGNOSTICS_KEPT)
        self.diagnostics_received = 0  # records, of which the last 256 are kept
        self.diagnostics_dropped = 0  # records the worker reported it dropped
        self.hello: Hello | None = None
        self.exit_info: ExitInfo | None = None
        self._spawned_at = trio.current_time()
        self._last_beat = self._spawned_at
        self._initialized = trio.Event()
        self._settled = trio.Event()  # initialized, or the attempt is ending
        self._exited = trio.Event()
        self._stderr_done = trio.Event()  # the stderr pipe reached its end
        self._stopped = trio.Event()
        self._stopping = False
        self._turn_id: str | None = None
        self._turn_taken = False  # an event of the running turn was read: the worker took it
        self._turn_send: TurnEventQueue[TurnEvent] | None = None  # the running turn's events
        self._turn_done = trio.Event()
        self._turn_done.set()  # no turn yet
        self._turn_tools = False  # whether the running turn's consumer answers tool calls
        self._turns = 0
        self._events = 0
        self._nursery: trio.Nursery | None = None

    def _why(self, when: str) -> str:
        """Why the attempt ended, naming the cause: the fence reason, or the exit status or
        signal once known, and the tail of its stderr (a traceback says the rest)."""
        if self.fence_reason:
            why = f"worker {self.attempt_id} was fenced {when}: {self.fence_reason}"
        else:
            code = self.process.returncode
            how = (
                "" if code is None
                else f" with status {code}" if code >= 0
                else f" (killed by signal {-code})"
            )  # fmt: skip
            why = f"worker {self.attempt_id} exited {when}{how}"
        tail = self.stderr.text()[-WHY_STDERR_CHARS:].strip()
        return f"{why}\nstderr (last lines):\n{tail}" if tail else why

    async def _settle_exit(self) -> None:
        """Give a dying worker a moment (bounded, shielded) to be reaped and its stderr to
        drain, so the turn it loses can say why."""
        with trio.CancelScope(shield=True), trio.move_on_after(EXIT_SETTLE_S):
            await self._exited.wait()
            await self._stderr_done.wait()

    def _end_turn(self, event: TurnEvent) -> None:
        if self._turn_send is not None and event.turn_id == self._turn_id:
            # The consumer may have abandoned the turn (closed its end): nobody to tell.
            with contextlib.suppress(trio.BrokenResourceError, trio.WouldBlock):
                self._turn_send.put_nowait(event)
            self._turn_send.end()
            self._turn_send = None
            self._turn_done.set()
            self._turn_id = None
            if self.state is WorkerState.BUSY:
                self.state = WorkerState.READY
