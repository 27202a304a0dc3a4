"""One prompt being answered, as a worker's handler sees it (part of the worker SDK).

Stdlib only, like the rest of the SDK. A turn streams authoritative events through its
worker's context (which applies the ack window) and waits for tool results and interrupts
on thread-safe primitives the context's reader thread sets.
"""

from __future__ import annotations

import queue
import threading

# typing costs a worker ~20 ms of start-up: import it for the type checker only.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from ._sdk import WorkerContext


class Turn:
    """One prompt being answered. The handler streams with `delta` and ends with
    `complete` or `fail`; returning without either completes it (or reports it
    interrupted, if the Node interrupted it)."""

    def __init__(self, context: WorkerContext, turn_id: str, text: str, request_id: str) -> None:
        self.context = context
        self.turn_id = turn_id
        self.text = text
        self.request_id = request_id
        self.artifact: dict[str, Any] | None = None  # the prompt's reference, until read
        self.interrupted = threading.Event()
        self.ended = False
        self._streamed = 0  # characters sent as message.delta
        self._calls = 0

    def event(self, kind: str, text: str | None = None, data: dict[str, Any] | None = None) -> None:
        """Send one authoritative event of this turn (waits while the ack window is full)."""
        if data is None:  # the hot path: no dict, one f-string
            self.context._send_event(None, (self.turn_id, kind, text, self.request_id))
            return
        frame: dict[str, Any] = {"type": "event", "turnId": self.turn_id, "kind": kind}
        if text is not None:
            frame["text"] = text
        frame["data"] = data
        frame["requestId"] = self.request_id
        self.context._send_event(frame, None)

    def delta(self, text: str) -> None:
        """Stream message text; long text goes out in several frames (each within 16 KiB)."""
        self._streamed += len(text)
        for start in range(0, max(len(text), 1), 4096):  # 4,096 characters ≤ 16 KiB
            self.event("message.delta", text[start : start + 4096])

    def complete(self, text: str | None = None, data: dict[str, Any] | None = None) -> None:
        """End the turn; `text` is the whole reply. A reply over 16 KiB cannot ride in one
        frame: its part not streamed yet goes out as deltas and the Node keeps the
        streamed text (so stream a long reply's text in order, as `delta` does)."""
        if text is not None and len(text) > 4096 and len(text.encode("utf-8")) > 16 * 1024:
            if len(text) > self._streamed:
                self.delta(text[self._streamed :])
            text = None
        self.ended = True
        self.event("turn.completed", text, data)

    def fail(self, message: str, code: str | None = None) -> None:
        """End the turn failed. `code` names the cause when the Node knows it
        (`launch_failed`: the harness could not be started); else `turn_failed`."""
        self.ended = True
        self.event("turn.failed", message[:4096], {"code": code} if code else None)

    def call_tool(self, name: str, arguments: dict[str, Any]) -> tuple[bool, str]:
        """Ask the Node to run tool `name`; blocks until its result `(ok, content)`.
        An interrupt ends the wait with `(False, "interrupted")`."""
        self._calls += 1
        call_id = f"{self.turn_id[:100]}-c{self._calls}"
        answer: queue.Queue[tuple[bool, str]] = queue.Queue(1)
        self.context._pending_calls[call_id] = answer
        try:
            self.context._send(
                {
                    "type": "tool-call",
                    "turnId": self.turn_id,
                    "callId": call_id,
                    "name": name,
                    "arguments": arguments,
                    "requestId": self.request_id,
                }
            )
            while not self.interrupted.is_set():
                try:
                    return answer.get(timeout=0.1)
                except queue.Empty:
                    continue
            return False, "interrupted"
        finally:
            self.context._pending_calls.pop(call_id, None)

    def sleep(self, seconds: float) -> bool:
        """Wait `seconds`; False (early) if the Node interrupted the turn."""
        return not self.interrupted.wait(seconds)

    def diagnostic(self, record: dict[str, Any]) -> None:
        self.context.diagnostic({"turnId": self.turn_id, **record})

    def diagnostics(self, records: list[dict[str, Any]]) -> int:
        """Queue `records` at once (no batch is taken between them); returns how many
        the full queue dropped."""
        return self.context.diagnostics([{"turnId": self.turn_id, **r} for r in records])
