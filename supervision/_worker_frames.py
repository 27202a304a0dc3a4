"""The frames of one worker attempt: read and dispatched, written whole.

One reader task takes every frame the worker sends (heartbeats are counted however slow the
Session actor is) and hands turn events to the running turn through a buffer the 256-frame
window bounds; anything out of order fences the worker. A `tool-call` of a turn whose
consumer hosts no tools is answered here at once with a `tool_unavailable` refusal. Frames
to the worker are written whole, shielded and bounded, because a frame cut off midway would
break the worker's sequence check.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

import trio

from worker_bridge import (
    Ack,
    Error,
    FrameWriteTimeout,
    Heartbeat,
    Hello,
    Initialize,
    Initialized,
    Interrupted,
    ObservationBatch,
    ProtocolError,
    Terminal,
    ToolCall,
    ToolResult,
    frame_from_wire,
)

from ._worker_core import ACK_EVERY
from ._worker_fencing import _HandleLifetime
from ._worker_types import WIRE_KINDS, DiagnosticBatch, TurnEvent, WorkerState, tool_refusal

log = logging.getLogger("maia.workers")


class _HandleFrames(_HandleLifetime):
    """Reading and writing the frames of a `WorkerHandle`."""

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
                if not self.fence_reason:
                    await self._settle_exit()
                if self._turn_id is not None:
                    self._end_turn(TurnEvent(self._turn_id, "lost", self._why("during the turn")))

    def _on_event(self, wire: dict[str, Any]) -> None:
        self._events += 1
        turn_id = wire["turnId"]
        if turn_id != self._turn_id:
            self.fence(f"event for turn {turn_id!r}, not the running turn")
            return
        self._turn_taken = True
        event = TurnEvent(
            turn_id, WIRE_KINDS[wire["kind"]], wire.get("text"), wire.get("data"), wire["sequence"]
        )
        if event.final:
            self._end_turn(event)
        elif self._turn_send is not None:
            try:
                self._turn_send.put_nowait(event)  # the window bounds the buffer
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
                self._report_diagnostics(records, dropped)
            case Error(message=message):
                self.fence(f"the worker reported an error: {message[:200]}")
            case ToolCall(turn_id=turn_id, call_id=call_id, name=name, arguments=arguments):
                if turn_id != self._turn_id or self._turn_send is None:
                    self.fence(f"tool-call for turn {turn_id!r}, not the running turn")
                    return
                if not self._turn_tools:  # no tool host: refuse now, or the turn would hang
                    self._nursery_send(ToolResult(turn_id, call_id, False, tool_refusal(name)))
                    return
                data = {"callId": call_id, "name": name, "arguments": arguments}
                try:  # a worker waits for each result, so calls never pile up
                    self._turn_send.put_nowait(TurnEvent(turn_id, "tool-call", None, data))
                except trio.WouldBlock:
                    self.fence("tool calls beyond the turn's buffer")
                except trio.BrokenResourceError:
                    self._nursery_send(ToolResult(turn_id, call_id, False, "turn abandoned"))
            case Terminal() | Ack():
                pass

    def _report_diagnostics(self, records: list[dict[str, Any]], dropped: int) -> None:
        """Hand the batch to the sink (the Node's observation stream and, for a drop, its
        journal); a failing sink is logged, never the worker's problem."""
        sink = self.diagnostics_sink
        if sink is None:
            return
        session = self.spec.activation.get("sessionId")
        turn = self._turn_id  # None once the turn ended: then the turn its records name
        if turn is None and records and isinstance(records[0].get("turnId"), str):
            turn = records[0]["turnId"]
        batch = DiagnosticBatch(self.attempt_id, session if isinstance(session, str) else None,
                                turn, tuple(records), dropped)  # fmt: skip
        try:
            sink(batch)
        except Exception:
            log.exception("worker %s: the diagnostics sink failed", self.attempt_id)

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
        if self.stream.writes_whole:  # a pipe's stream shields and bounds its own waits
            try:
                await write()
            except FrameWriteTimeout:
                pass  # fenced below
            except (trio.BrokenResourceError, trio.ClosedResourceError, ProtocolError):
                return False
            else:
                return True
            self.fence(f"a frame could not be written within {self.timings.interrupt_ms} ms")
            return False
        # one scope: shielded from the caller's cancel, still cancelled by its own deadline
        bound = trio.current_time() + self.timings.interrupt_ms / 1000
        with trio.CancelScope(shield=True, deadline=bound):
            try:
                await write()
            except (trio.BrokenResourceError, trio.ClosedResourceError, ProtocolError):
                return False
            return True
        self.fence(f"a frame could not be written within {self.timings.interrupt_ms} ms")
        return False
