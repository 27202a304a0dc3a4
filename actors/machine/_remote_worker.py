"""A Session's worker on an Execution Node, as the Session actor sees it: the same handle
interface as `supervision.workers.WorkerHandle`, with the machine link as its transport.

The handle is fed by the relay (`_relay`): `worker` frames move its phase, `turn_event`
frames become the `TurnEvent`s its `prompt` yields. Nothing local decides that the remote
process stopped: a lost link leaves the handle as it is (the turn running, the attempt
live) until the Execution Node reports the attempt `exited`, or, after its restart, that it
runs no such attempt (cleanup reconciled). Only then does an open turn end `lost` (the
Session actor records it `runtime_lost`) and `wait_stopped` return: a replacement can never
start while the old process may still run (spec MN0 item 10).
"""

from __future__ import annotations

import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterable
from typing import Any, Final

import trio

from maia.core import MaiaError
from supervision.workers import (
    ExitInfo,
    TurnEvent,
    TurnEvents,
    WorkerFailed,
    WorkerState,
    WorkerStatistics,
)

from ._relay_frames import (
    AbandonFrame,
    InterruptFrame,
    PromptFrame,
    StopWorkerFrame,
    TurnEventFrame,
    WorkerFrame,
)

INIT_BOUND_S: Final = 60.0
STOP_BOUND_S: Final = 25.0  # below the Session runtime's 30 s orphan stop
TURN_CHANNEL: Final = 512
RUNTIME_LOST: Final = "runtime_lost"  # the turn's failure reason when its prompt never left
Send = Callable[[object], Awaitable[bool]]  # False: the link is down now


class RemoteWorkerHandle:
    """One remote attempt (see the module)."""

    def __init__(self, attempt_id: str, epoch: int, send: Send,
                 acknowledge: Callable[[int], Awaitable[None]],
                 release: Callable[[Iterable[int]], None] = lambda _: None,
                 connected: Callable[[], bool] = lambda: True) -> None:  # fmt: skip
        self.attempt_id = attempt_id
        self.epoch = epoch
        self.pid = 0
        self.state = WorkerState.STARTING
        self.exit_info: ExitInfo | None = None
        self.diagnostics: tuple[dict[str, Any], ...] = ()
        self.refusal: str | None = None
        self._send = send
        self._acknowledge = acknowledge  # the Session actor took this record
        self._release = release  # these were queued but no actor will take them
        # The machine's link is up and its Node acts on `abandon` (an older Node does not
        # know the frame: `maia.machines._gate`), so a fence sent now goes out and holds.
        self._connected = connected
        self.abandoned: AbandonFrame | None = None  # the fence sent for a turn given up
        self._open: set[int] = set()  # records queued for the actor, not taken yet
        self._spawned = trio.Event()
        self._initialized = trio.Event()
        self._stopped = trio.Event()
        self._turn_id: str | None = None
        self._turn: trio.MemorySendChannel[TurnEvent] | None = None
        self._turn_taken = False  # an event of the running turn came: the worker took it
        self._turns = 0
        self._events = 0
        self._last_sequence = 0  # the newest evidence record taken: a replay is dropped
        self._created = time.monotonic()

    # -- fed by the relay --------------------------------------------------------------

    async def on_worker(self, frame: WorkerFrame) -> None:
        if frame.phase == "spawned":
            self.pid = frame.pid or 0
            self._spawned.set()
        elif frame.phase == "initialized":
            if self._initialized.is_set() or self._stopped.is_set():
                return  # sent again after a reconnect: heard already (or the worker ended)
            self.state = WorkerState.READY
            self._initialized.set()
        else:  # exited or refused: the Execution Node confirms the process is gone
            reason = frame.reason or frame.fence_reason
            self.refusal = frame.reason if frame.phase == "refused" else None
            await self.ended(ExitInfo(frame.returncode, frame.signal, reason,
                                      frame.stop_phase or "exited", (),
                                      frame.stderr_tail or ""))  # fmt: skip

    async def ended(self, info: ExitInfo) -> None:
        """The attempt is gone (reported or reconciled): end an open turn `lost`."""
        if self._stopped.is_set():
            return
        self.exit_info, self.state = info, WorkerState.EXITED
        if self._turn is not None and self._turn_id is not None:
            await self._turn.send(TurnEvent(self._turn_id, "lost", info.fence_reason))
            self._turn = None
        self._spawned.set()
        self._stopped.set()

    async def on_turn_event(self, frame: TurnEventFrame) -> bool:
        """Queue the record for the Session actor; False when it is dropped instead."""
        if self._turn is None or frame.turn_id != self._turn_id or self.abandoned is not None:
            return False  # a turn this handle no longer runs (or fenced): nothing to apply
        if frame.sequence <= self._last_sequence:
            return False  # a replayed or late record (sequences only grow): stored already
        self._last_sequence = frame.sequence
        self._turn_taken = True
        event = TurnEvent(frame.turn_id, frame.kind, frame.text, frame.data, frame.sequence)
        self._events += 1
        self._open.add(frame.sequence)
        await self._turn.send(event)
        if event.final:
            self._turn = None
        return True

    def _drop_open(self) -> None:
        """The turn's consumer is gone: what it did not take, no actor will."""
        if self._open:
            self._release(sorted(self._open))
            self._open.clear()

    async def wait_spawned(self) -> None:
        with trio.move_on_after(INIT_BOUND_S):
            await self._spawned.wait()
        if self.refusal is not None or not self._spawned.is_set():
            raise MaiaError("unavailable", f"the Execution Node did not start the worker: "
                            f"{self.refusal or 'no answer'}", {"target": "worker"})  # fmt: skip

    # -- the Session actor's API -------------------------------------------------------

    async def wait_initialized(self) -> None:
        with trio.move_on_after(INIT_BOUND_S):
            async with trio.open_nursery() as nursery:

                async def either(event: trio.Event) -> None:
                    await event.wait()
                    nursery.cancel_scope.cancel()

                nursery.start_soon(either, self._initialized)
                nursery.start_soon(either, self._stopped)
        if not self._initialized.is_set() or self._stopped.is_set():
            raise WorkerFailed(f"remote worker {self.attempt_id} did not initialize",
                               self.exit_info)  # fmt: skip

    def prompt(self, turn_id: str, text: str, *, tools: bool = False,
               artifacts: str | None = None) -> TurnEvents:  # fmt: skip
        if self.state is not WorkerState.READY or self._turn_id is not None:
            raise MaiaError("invalid_state", f"worker {self.attempt_id} is {self.state.value}",
                            {"resource": "worker", "id": self.attempt_id,
                             "state": self.state.value})  # fmt: skip
        send, receive = trio.open_memory_channel[TurnEvent](TURN_CHANNEL)
        self._turn_id, self._turn, self.state = turn_id, send, WorkerState.BUSY
        self._turn_taken = False
        self._turns += 1
        return TurnEvents(self._events_of(turn_id, text, receive), self._withdraw)

    async def _events_of(self, turn_id: str, text: str,
                         receive: trio.MemoryReceiveChannel[TurnEvent],
                         ) -> AsyncGenerator[TurnEvent, None]:  # fmt: skip
        if not await self._send(PromptFrame("prompt", self.attempt_id, turn_id, text)):
            # The link is down (or the machine revoked): the prompt never left this Node,
            # so nothing ran. The turn ends lost (`runtime_lost`); the attempt stays in the
            # relay until reconciled, which holds any replacement (spec MN0 item 10).
            self._turn_id, self._turn = None, None
            self.state = WorkerState.READY
            yield TurnEvent(turn_id, "lost", RUNTIME_LOST)
            return
        try:
            async for event in receive:
                yield event  # resumed: the actor took it; the relay acknowledges what it may
                if event.sequence:
                    self._open.discard(event.sequence)
                    await self._acknowledge(event.sequence)
                if event.final:
                    return
        finally:
            self._drop_open()
            self._turn_id = None
            if self.state is WorkerState.BUSY:
                self.state = WorkerState.READY

    def _withdraw(self) -> None:
        self._drop_open()
        self._turn_id, self._turn = None, None
        if self.state is WorkerState.BUSY:
            self.state = WorkerState.READY

    async def interrupt(self, turn_id: str) -> None:
        await self._send(InterruptFrame("interrupt", self.attempt_id, turn_id))

    def abandon(self, turn_id: str, reason: str) -> bool:
        """Give up turn `turn_id` before the worker takes it, as `WorkerHandle.abandon`
        does: if no event of it has come, fence this attempt here (no record of it is taken
        any more) and mark the `abandon` frame `send_abandon` sends, on which the Execution
        Node drops the turn's prompt and fences and stops the worker at once. False, and
        nothing done, when the turn is not the running one, an event of it came (the worker
        began it), or the link is down or its Node is older and does not know the frame: a
        fence that cannot reach the Node now (or that it would refuse) could not keep the
        worker from starting the turn later, so the interrupt stays refused."""
        if self._turn_id != turn_id or self._turn_taken or self._stopped.is_set():
            return False
        if self.abandoned is not None or not self._connected():
            return False
        self.abandoned = AbandonFrame("abandon", self.attempt_id, turn_id, reason[:256])
        self.state = WorkerState.STOPPING
        return True

    async def send_abandon(self) -> None:
        """Send the fence `abandon` marked (again after a reconnect: the relay's hello);
        the Node's `exited` frame then ends this attempt."""
        if self.abandoned is not None and not self._stopped.is_set():
            await self._send(self.abandoned)

    def tool_result(self, *args: Any, **kwargs: Any) -> None:
        """Remote turns run without a tool host (every call is refused on the Node)."""

    async def stop(self, reason: str = "stop") -> ExitInfo:
        """Ask the Execution Node to stop the attempt and wait, bounded and shielded, for it
        to say so. Raises `WorkerFailed` when it did not (the link is down: the attempt
        stays live here until the Node reconciles it) — at once when the frame could not
        even be sent, since no confirmation can come back on a link that is not there (a
        Control Node stopping with placed Sessions waited 25 s per worker for one)."""
        with trio.CancelScope(shield=True):
            if not self._stopped.is_set():
                frame = StopWorkerFrame("stop_worker", self.attempt_id, reason[:256])
                if await self._send(frame):
                    with trio.move_on_after(STOP_BOUND_S):
                        await self._stopped.wait()
        if self.exit_info is None:
            raise WorkerFailed(f"remote worker {self.attempt_id}: stop not confirmed")
        return self.exit_info

    async def wait_stopped(self) -> ExitInfo:
        await self._stopped.wait()
        assert self.exit_info is not None
        return self.exit_info

    def statistics(self) -> WorkerStatistics:
        fence = None if self.exit_info is None else self.exit_info.fence_reason
        age = int((time.monotonic() - self._created) * 1000)
        return WorkerStatistics(self.attempt_id, self.epoch, self.pid, self.state, age,
                                self._turns, self._events, 0, 0, fence)  # fmt: skip
