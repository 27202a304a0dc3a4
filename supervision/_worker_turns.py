"""The turns of one worker attempt: prompt, iterate and acknowledge, interrupt, tool results.

One turn at a time. Its events come in batches: each wake-up of the consumer takes every
event the reader has queued since (one pipe read's or more), so a consumer that forwards
them (the Session's pump) sends one message per batch, not per event. Events are
acknowledged as the Session actor consumes them, every `ACK_EVERY` (half the window)
consumed events, so a slow actor slows the worker, never the reader; unacknowledged events
never exceed the window's other half while the actor keeps up, so the worker is never held
back by a missing ack. The rest of a turn's events (at most `ACK_EVERY - 1`, its final one
among them) are acknowledged in the same write as the next prompt: one pipe write per
short turn instead of three. A turn abandoned mid-way is acknowledged to the end so the
worker can finish it; one closed before its prompt was sent is withdrawn."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator

import trio

from maia.core import MaiaError
from worker_bridge import (
    MAX_CONTENT_BYTES,
    MAX_TOOL_RESULT_BYTES,
    MAX_UNACKED_EVENTS,
    ArtifactError,
    Interrupt,
    LocalProtocolError,
    Prompt,
    ToolResult,
    release_artifact,
    write_artifact,
)

from ._turn_events import TurnEventQueue
from ._worker_core import ACK_EVERY
from ._worker_frames import _HandleFrames
from ._worker_types import TurnEvent, TurnEvents, WorkerState


class _HandleTurns(_HandleFrames):
    """The turn API of a `WorkerHandle`."""

    def prompt(
        self, turn_id: str, text: str, *, tools: bool = False, artifacts: str | None = None
    ) -> TurnEvents:
        """Start a turn and iterate its events; the last one has `final` set.

        With `tools`, the worker's tool calls come as `tool-call` events for the consumer to
        answer (`tool_result`); without (no tool host), each is refused at once with a
        `tool_unavailable` result, so the worker goes on instead of waiting out its turn.
        Text over 16 KiB travels as an artifact reference written in the home `artifacts`
        names (removed when the turn ends); without one it raises
        `MaiaError(validation_failed)`. Raises `MaiaError(invalid_state)` if the worker is
        not ready or busy. Iterate to the end (or close the iterator): until the worker
        ends the turn the handle stays busy."""
        inline = len(text.encode("utf-8", "surrogatepass")) <= MAX_CONTENT_BYTES
        if artifacts is None and not inline:
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
        # Not subscripted: calling a generic alias costs ~2 µs (a whole turn's queue ~0.4).
        events: TurnEventQueue[TurnEvent] = TurnEventQueue(MAX_UNACKED_EVENTS + 8)
        self._turn_id, self._turn_send = turn_id, events
        self._turn_taken = False
        self._turn_tools = tools
        self._turn_done = trio.Event()
        self.state = WorkerState.BUSY
        self._turns += 1
        if inline or artifacts is None:  # the common prompt: one generator fewer a batch
            prompt = Prompt(turn_id=turn_id, text=text, request_id=turn_id)
            batches = self._run_prompt(turn_id, prompt, events)
        else:
            batches = self._iterate(turn_id, text, events, artifacts)
        return TurnEvents.of_batches(batches, lambda: self._withdraw(turn_id))

    def _withdraw(self, turn_id: str) -> None:
        """End a turn whose prompt was never sent (its events were closed unstarted)."""
        if self._turn_id == turn_id:
            self._end_turn(TurnEvent(turn_id, "interrupted"))

    async def _iterate(
        self,
        turn_id: str,
        text: str,
        events: TurnEventQueue[TurnEvent],
        artifacts: str,
    ) -> AsyncGenerator[tuple[TurnEvent, ...], None]:
        """A prompt over 16 KiB: written as an artifact first, then run as any other."""
        data = text.encode("utf-8", "surrogatepass")
        reference = None
        prompt: Prompt | None = None
        try:
            reference = await trio.to_thread.run_sync(write_artifact, artifacts, data)
            prompt = Prompt(turn_id=turn_id, text="", artifact=reference, request_id=turn_id)
        except (OSError, ArtifactError) as error:
            self._end_turn(TurnEvent(turn_id, "lost", f"prompt artifact: {error}"))
        del data
        try:
            async with contextlib.aclosing(self._run_prompt(turn_id, prompt, events)) as batches:
                async for batch in batches:
                    yield batch
        finally:
            if reference is not None:
                release_artifact(reference)

    async def _run_prompt(
        self,
        turn_id: str,
        prompt: Prompt | None,
        events: TurnEventQueue[TurnEvent],
    ) -> AsyncGenerator[tuple[TurnEvent, ...], None]:
        # prompt None: it could not be prepared, the turn is lost already; the previous
        # turn's rest is acknowledged in the prompt's write
        if prompt is not None and self._stopping:  # fenced or stopped before it went out
            self._end_turn(TurnEvent(turn_id, "lost", self._why("before the prompt was sent")))
        elif prompt is not None:
            refusals: list[str] = []
            if not await self._send_whole(lambda: self._send_prompt(prompt, refusals)):
                self._end_turn(TurnEvent(turn_id, "lost", self._why("when prompted")))
            elif refusals:  # not written, the ack before it was: the worker goes on
                refused = f"the prompt was refused by the worker protocol: {refusals[0]}"
                self._end_turn(TurnEvent(turn_id, "failed", refused))
        try:
            since_ack = 0  # consumed events not yet acknowledged
            with events:  # abandoned synchronously: no schedule point at a turn's end
                while True:
                    try:
                        event = events.get_nowait()
                    except trio.WouldBlock:
                        try:
                            event = await events.get()
                        except trio.EndOfChannel:
                            return
                    except trio.EndOfChannel:
                        return
                    batch = [event]  # and every event already read with it
                    while not event.final:
                        try:
                            event = events.get_nowait()
                        except (trio.WouldBlock, trio.EndOfChannel):
                            break
                        batch.append(event)
                    through = 0
                    for each in batch:
                        if each.sequence:
                            since_ack += 1
                            if since_ack >= ACK_EVERY and not each.final:
                                through, since_ack = each.sequence, 0
                    if through:
                        await self._ack(through)  # also a busy stream's checkpoint
                    yield tuple(batch)
                    if event.final:
                        return
        finally:
            if self._turn_id == turn_id:  # abandoned mid-turn: let the worker finish it
                self._ack_all_soon()

    async def _send_prompt(self, prompt: Prompt, refusals: list[str]) -> None:
        """Write `prompt` after the ack owed; a refusal of ours is noted in `refusals`."""
        try:
            await self.stream.send_acked(prompt)
        except LocalProtocolError as error:
            refusals.append(error.message)

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

    def abandon(self, turn_id: str, reason: str) -> bool:
        """Give up turn `turn_id` before the worker takes it: if no event of it has been
        read yet, fence the worker (no frame of it is read any more, and its stop begins at
        once), so it can never start the turn. False, and nothing done, when the turn is
        not the running one or the worker has begun it (its events are on their way)."""
        if self._turn_id != turn_id or self._turn_taken:
            return False
        self.fence(reason)
        return True

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
