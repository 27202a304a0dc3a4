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
"""

from __future__ import annotations

import contextlib
from collections import deque
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import Any

import trio

from maia.protocol import MaiaError
from worker_bridge import (
    MAX_CONTENT_BYTES,
    MAX_TOOL_RESULT_BYTES,
    MAX_UNACKED_EVENTS,
    Ack,
    Error,
    Heartbeat,
    Hello,
    Initialize,
    Initialized,
    Interrupt,
    Interrupted,
    ObservationBatch,
    Prompt,
    ProtocolError,
    Shutdown,
    Terminal,
    ToolCall,
    ToolResult,
    TrioFrameStream,
    frame_from_wire,
)

from ._process_group import StderrRing
from ._worker_config import WorkerSpec, WorkerTimings
from ._worker_stop import stop_process_tree
from ._worker_types import (
    WIRE_KINDS,
    ExitInfo,
    TurnEvent,
    TurnEvents,
    WorkerFailed,
    WorkerState,
    WorkerStatistics,
)

ACK_EVERY = 128  # consumed events between acks while more wait (half the window)
DIAGNOSTICS_KEPT = 256


class WorkerHandle:
    """A spawned worker attempt. Built by `WorkerSupervisor.start_worker`."""

    def __init__(
        self,
        *,
        spec: WorkerSpec,
        timings: WorkerTimings,
        process: trio.Process,
        stream: TrioFrameStream,
        attempt_id: str,
        epoch: int,
    ) -> None:
        self.spec = spec
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
        self._stopped = trio.Event()
        self._stopping = False
        self._turn_id: str | None = None
        self._turn_send: trio.MemorySendChannel[TurnEvent] | None = None
        self._turn_done = trio.Event()
        self._turn_done.set()  # no turn yet
        self._turns = 0
        self._events = 0
        self._nursery: trio.Nursery | None = None

    # -- lifecycle (the supervisor calls this) ----------------------------------------

    def start_tasks(self, nursery: trio.Nursery) -> None:
        self._nursery = nursery
        nursery.start_soon(self._read_frames)
        nursery.start_soon(self._read_stderr)
        nursery.start_soon(self._watch)
        nursery.start_soon(self._wait_exit)

    # -- the Session actor's API ------------------------------------------------------

    async def wait_initialized(self) -> None:
        """Wait for `initialized` (bounded by the init bound: the watchdog fences after).

        Raises `WorkerFailed` when the worker was fenced or exited instead."""
        bound = (self.timings.init_ms + self.timings.kill_wait_ms) / 1000
        with trio.move_on_after(bound):
            await self._settled.wait()
        if not self._initialized.is_set() or self._stopping:
            raise WorkerFailed(self._why("before it was initialized"), self.exit_info)

    def prompt(self, turn_id: str, text: str) -> TurnEvents:
        """Start a turn and iterate its events; the last one has `final` set.

        Raises `MaiaError(validation_failed)` for text over 16 KiB and
        `MaiaError(invalid_state)` if the worker is not ready or busy. Iterate to the end
        (or close the iterator): until the worker ends the turn the handle stays busy."""
        if len(text.encode("utf-8", "surrogatepass")) > MAX_CONTENT_BYTES:
            raise MaiaError(
                "validation_failed",
                f"text: exceeds {MAX_CONTENT_BYTES} bytes",
                {"path": "text", "detail": f"exceeds {MAX_CONTENT_BYTES} bytes"},
            )
        if self.state is not WorkerState.READY or self._turn_id is not None:
            raise MaiaError(
                "invalid_state",
                f"worker {self.attempt_id} is {self.state.value}",
                {"resource": "worker", "id": self.attempt_id, "state": self.state.value},
            )
        send, receive = trio.open_memory_channel[TurnEvent](MAX_UNACKED_EVENTS + 8)
        self._turn_id, self._turn_send = turn_id, send
        self._turn_done = trio.Event()
        self.state = WorkerState.BUSY
        self._turns += 1
        return TurnEvents(self._iterate(turn_id, text, receive), lambda: self._withdraw(turn_id))

    def _withdraw(self, turn_id: str) -> None:
        """End a turn whose prompt was never sent (its events were closed unstarted)."""
        if self._turn_id == turn_id:
            self._end_turn(TurnEvent(turn_id, "interrupted"))

    async def _iterate(
        self, turn_id: str, text: str, receive: trio.MemoryReceiveChannel[TurnEvent]
    ) -> AsyncGenerator[TurnEvent, None]:
        prompt = Prompt(turn_id=turn_id, text=text, request_id=turn_id)
        acked = await self._send_whole(self.stream.send_ack)  # leftovers of an abandoned turn
        if not (acked and await self._send_whole(lambda: self.stream.send(prompt))):
            self._end_turn(TurnEvent(turn_id, "lost", self._why("when prompted")))
        try:
            through = 0  # the last consumed event's sequence, not yet acked
            since_ack = 0
            async with receive:
                while True:
                    try:
                        event = receive.receive_nowait()
                    except trio.WouldBlock:
                        if through:  # about to wait: let the worker refill its window first
                            await self._ack(through)
                            through = since_ack = 0
                        try:
                            event = await receive.receive()
                        except trio.EndOfChannel:
                            return
                    except trio.EndOfChannel:
                        return
                    if event.sequence:
                        through = event.sequence
                        since_ack += 1
                    if through and (event.final or since_ack >= ACK_EVERY):
                        await self._ack(through)  # also the checkpoint of a busy stream
                        through = since_ack = 0
                    yield event
                    if event.final:
                        return
        finally:
            if self._turn_id == turn_id:  # abandoned mid-turn: let the worker finish it
                self._ack_all_soon()

    async def interrupt(self, turn_id: str) -> bool:
        """Ask the worker to stop turn `turn_id`; True if the turn ended within the
        interrupt bound. Otherwise the worker is stopped (SIGTERM, then SIGKILL)."""
        if self._turn_id != turn_id:
            return True
        await self._send_whole(lambda: self.stream.send(Interrupt(turn_id=turn_id)))
        with trio.move_on_after(self.timings.interrupt_ms / 1000):
            await self._turn_done.wait()
            return True
        self._begin_stop(graceful=False, reason=None)
        return False

    async def tool_result(self, turn_id: str, call_id: str, ok: bool, content: str) -> None:
        """Answer a `tool-call` event of the running turn. Raises
        `MaiaError(validation_failed)` for content over 64 KiB (use an artifact reference)."""
        if len(content.encode("utf-8", "surrogatepass")) > MAX_TOOL_RESULT_BYTES:
            raise MaiaError(
                "validation_failed",
                f"content: exceeds {MAX_TOOL_RESULT_BYTES} bytes",
                {"path": "content", "detail": f"exceeds {MAX_TOOL_RESULT_BYTES} bytes"},
            )
        if turn_id == self._turn_id:
            await self._send_quietly(ToolResult(turn_id, call_id, ok, content))

    async def wait_turn_ended(self) -> None:
        """Wait until no turn is running (e.g. after abandoning one). Unbounded by itself:
        wrap it in a timeout, or rely on the heartbeat fence ending the attempt."""
        await self._turn_done.wait()

    async def stop(self, reason: str = "stop") -> ExitInfo:
        """Stop boundedly: interrupt and shutdown (interrupt bound), SIGTERM and SIGCONT to
        the group (terminate bound), SIGKILL to the group; then sweep descendants.

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

    # -- internals --------------------------------------------------------------------

    def _why(self, when: str) -> str:
        if self.fence_reason:
            return f"worker {self.attempt_id} was fenced {when}: {self.fence_reason}"
        return f"worker {self.attempt_id} exited {when}"

    def _ack_all_soon(self) -> None:
        if self._nursery is not None and not self._stopping:
            self._nursery.start_soon(self._ack_all)

    async def _ack_all(self) -> None:
        await self._send_whole(self.stream.send_ack)

    async def _ack(self, through: int) -> None:
        await self._send_whole(lambda: self.stream.send_ack(through))

    async def _send_whole(self, write: Callable[[], Awaitable[None]]) -> bool:
        """Write one frame whole; False if the pipe is gone. A frame takes its sequence
        before its bytes go out, so a write cut off by the caller's cancel (a reader
        cancelled while it acks) would leave a gap or half a line, which the worker refuses
        as a protocol error. So the write is shielded, and bounded by the interrupt bound:
        a worker that stops reading for that long is fenced."""
        with trio.CancelScope(shield=True):
            with trio.move_on_after(self.timings.interrupt_ms / 1000):
                try:
                    await write()
                except (trio.BrokenResourceError, trio.ClosedResourceError, ProtocolError):
                    return False
                return True
        self.fence(f"a frame could not be written within {self.timings.interrupt_ms} ms")
        return False

    def _end_turn(self, event: TurnEvent) -> None:
        if self._turn_send is not None and event.turn_id == self._turn_id:
            # The consumer may have abandoned the turn (closed its end): nobody to tell.
            with contextlib.suppress(trio.BrokenResourceError, trio.WouldBlock):
                self._turn_send.send_nowait(event)
            self._turn_send.close()
            self._turn_send = None
            self._turn_done.set()
            self._turn_id = None
            if self.state is WorkerState.BUSY:
                self.state = WorkerState.READY

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

    async def _read_frames(self) -> None:
        try:
            while True:
                wire = await self.stream.receive_wire()
                if wire is None or self.fence_reason is not None:
                    return
                if wire["type"] == "event":  # the hot path stays on the checked dict
                    self._on_event(wire)
                else:
                    self._on_frame(frame_from_wire(wire))
        except ProtocolError as exc:
            self.fence(f"protocol error: {exc.message}")
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            return
        finally:
            if self._turn_id is not None and (self._stopping or self.fence_reason):
                self._end_turn(TurnEvent(self._turn_id, "lost", self._why("during the turn")))

    def _on_event(self, wire: dict[str, Any]) -> None:
        self._events += 1
        turn_id = wire["turnId"]
        if turn_id != self._turn_id:
            self.fence(f"event for turn {turn_id!r}, not the running turn")
            return
        event = TurnEvent(
            turn_id, WIRE_KINDS[wire["kind"]], wire.get("text"), wire.get("data"), wire["sequence"]
        )
        if event.final:
            self._end_turn(event)
        elif self._turn_send is not None:
            try:
                self._turn_send.send_nowait(event)  # the window bounds the buffer
            except trio.WouldBlock:
                self.fence("more unacknowledged events than the window allows")
            except trio.BrokenResourceError:  # abandoned: the worker still finishes it
                if self.stream.connection.wire.unacked_received >= ACK_EVERY:
                    self._ack_all_soon()

    def _on_frame(self, frame: object) -> None:
        match frame:
            case Heartbeat():
                self._last_beat = trio.current_time()
            case Interrupted(turn_id=turn_id):
                self._end_turn(TurnEvent(turn_id, "interrupted"))
            case Hello():
                self.hello = frame
                self._nursery_send_initialize()
            case Initialized():
                self._last_beat = trio.current_time()
                if self.state is WorkerState.STARTING:
                    self.state = WorkerState.READY
                self._initialized.set()
                self._settled.set()
            case ObservationBatch(records=records, dropped=dropped):
                self.diagnostics.extend(records)
                self.diagnostics_received += len(records)
                self.diagnostics_dropped += dropped
            case Error(message=message):
                self.fence(f"the worker reported an error: {message[:200]}")
            case ToolCall(turn_id=turn_id, call_id=call_id, name=name, arguments=arguments):
                if turn_id != self._turn_id or self._turn_send is None:
                    self.fence(f"tool-call for turn {turn_id!r}, not the running turn")
                    return
                data = {"callId": call_id, "name": name, "arguments": arguments}
                try:  # a worker waits for each result, so calls never pile up
                    self._turn_send.send_nowait(TurnEvent(turn_id, "tool-call", None, data))
                except trio.WouldBlock:
                    self.fence("tool calls beyond the turn's buffer")
                except trio.BrokenResourceError:
                    self._nursery_send(ToolResult(turn_id, call_id, False, "turn abandoned"))
            case Terminal() | Ack():
                pass

    def _nursery_send(self, frame: ToolResult) -> None:
        assert self._nursery is not None
        self._nursery.start_soon(self._send_quietly, frame)

    def _nursery_send_initialize(self) -> None:
        assert self._nursery is not None
        initialize = Initialize(
            attempt_id=self.attempt_id,
            heartbeat_ms=self.timings.heartbeat_ms,
            activation=dict(self.spec.activation),
            options=dict(self.spec.options),
        )
        self._nursery.start_soon(self._send_quietly, initialize)

    async def _send_quietly(self, frame: Initialize | ToolResult) -> None:
        await self._send_whole(lambda: self.stream.send(frame))

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
