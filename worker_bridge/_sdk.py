"""The worker-side SDK: `run_worker(handler)` turns a function into a protocol-speaking worker.

Stdlib only (threads, no trio, no attrs) so a worker is ready within a few tens of
milliseconds of its spawn. Three threads share one `WireConnection` under a lock:
- the reader reads stdin, answers `initialize`, queues prompts, applies acks, interrupts
  and shutdown; at end of stdin it exits the process (a dead Node leaves no workers);
- the ticker sends a heartbeat every interval and flushes the diagnostic queue;
- the main thread runs `handler(context, turn)` for one prompt at a time.
Frames are written with one `os.write` each (nothing waits in a userspace buffer) to a
private copy of fd 1; fd 1 itself is pointed at stderr, so a stray `print` cannot corrupt
the protocol stream. Event frames wait for the Node's cumulative ack when 256 are in flight.
"""

from __future__ import annotations

import os
import queue
import signal
import sys
import threading
import time

from ._artifacts import read_artifact
from ._diagnostics import DiagnosticQueue
from ._errors import ProtocolError
from ._limits import ENV_ATTEMPT, ENV_EPOCH, ENV_HEARTBEAT_MS, HEARTBEAT_INTERVAL_MS
from ._schema import WORKER
from ._turn import Turn
from ._wire import Signal, WireConnection

# typing costs a worker ~20 ms of start-up: import it for the type checker only.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, NoReturn


DIAGNOSTIC_LINGER_S = 0.02


class WorkerContext:
    """What a handler may ask of its worker: options, diagnostics, and test hooks."""

    def __init__(self, name: str, version: str, capabilities: list[str]) -> None:
        self.name = name
        self.version = version
        self.capabilities = capabilities
        self.epoch = int(os.environ.get(ENV_EPOCH, "0") or 0)
        self.attempt_id = os.environ.get(ENV_ATTEMPT, "")
        self.heartbeat_s = int(os.environ.get(ENV_HEARTBEAT_MS, HEARTBEAT_INTERVAL_MS)) / 1000
        self.options: dict[str, str] = {}
        self.activation: dict[str, Any] = {}
        self.connection = WireConnection(WORKER, epoch=self.epoch, worker_version=version)
        # Guards the connection; notified on acks. A plain Lock: cheaper than the RLock default.
        self._lock = threading.Condition(threading.Lock())
        self._write_lock = threading.Lock()  # one frame at a time on the pipe
        self._out = os.dup(1)
        self._prompts: queue.Queue[Turn | None] = queue.Queue()
        self._tick = threading.Condition()
        self._diagnostics = DiagnosticQueue()
        self._initialized = threading.Event()
        self._current: Turn | None = None
        self._silent = False
        self._stubborn = False
        self._stopping = False
        self.exit_hooks: list[Callable[[], None]] = []
        self._pending_calls: dict[str, queue.Queue[tuple[bool, str]]] = {}

    # -- for handlers ------------------------------------------------------------------

    def diagnostic(self, record: dict[str, Any]) -> None:
        """Queue a diagnostic record (never blocks; dropped and counted when full)."""
        with self._tick:
            self._diagnostics.push(record)
            self._tick.notify()

    def diagnostics(self, records: list[dict[str, Any]]) -> int:
        """Queue `records` in one step (the ticker takes no batch between them); returns
        how many were dropped because the queue was full."""
        with self._tick:
            dropped = sum(not self._diagnostics.push(record) for record in records)
            self._tick.notify()
        return dropped

    def go_silent(self) -> None:
        """Stop heartbeating and answering (test directive `/silent`)."""
        self._silent = True

    def ignore_stop_requests(self) -> None:
        """Ignore SIGTERM, interrupts, shutdown and end of stdin (test directive)."""
        self._stubborn = True
        signal.signal(signal.SIGTERM, signal.SIG_IGN)

    def write_raw(self, data: bytes) -> None:
        """Write bytes that are not a frame (test directives `/oversize`, `/garbage`)."""
        with self._write_lock:
            self._write(data)

    def send_heartbeat(self, *, epoch: int | None = None) -> None:
        """Send a heartbeat now; `epoch` forges another epoch (test directive)."""
        with self._write_lock:
            with self._lock:
                saved = self.connection.epoch
                self.connection.epoch = saved if epoch is None else epoch
                try:
                    line = self.connection.send({"type": "heartbeat"})
                finally:
                    self.connection.epoch = saved
            self._write(line)

    # -- plumbing ----------------------------------------------------------------------

    def _write(self, data: bytes) -> None:
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(self._out, view) :]
        except OSError:  # the Node closed our stdout: it is gone
            self._exit(0)

    def _send(self, frame: dict[str, Any]) -> None:
        with self._write_lock:
            with self._lock:
                line = self.connection.send(frame)
            self._write(line)

    def _send_event(
        self, frame: dict[str, Any] | None, fast: tuple[str, str, str | None, str] | None
    ) -> None:
        connection = self.connection
        while True:
            with self._write_lock:
                with self._lock:
                    line = None
                    if connection.window_open:
                        if frame is not None:
                            line = connection.send(frame)
                        else:
                            assert fast is not None
                            line = connection.send_event(*fast)
                if line is not None:
                    self._write(line)
                    return
            with self._lock:  # the window is full: wait for the Node's ack
                while not self._window_open():
                    self._lock.wait(1.0)

    def _window_open(self) -> bool:
        return self.connection.window_open

    def _exit(self, code: int) -> NoReturn:
        for hook in self.exit_hooks:
            try:
                hook()
            except Exception as exc:  # an exit hook must not keep a worker alive
                print(f"exit hook failed: {exc!r}", file=sys.stderr)
        os._exit(code)

    def _read_loop(self) -> None:
        while True:
            try:
                data = os.read(0, 65536)
            except OSError:
                data = b""
            frames: list[dict[str, Any]] = []
            try:
                with self._lock:
                    self.connection.receive_data(data)
                    while True:
                        frame = self.connection.next_frame()
                        if frame is Signal.NEED_DATA:
                            break
                        if frame is Signal.PEER_CLOSED:
                            frames.append({"type": "_eof"})
                            break
                        assert isinstance(frame, dict)
                        frames.append(frame)
                        if frame["type"] == "ack":
                            self._lock.notify_all()
            except ProtocolError as exc:
                print(f"{self.name}: protocol error from the Node: {exc}", file=sys.stderr)
                try:
                    self._send({"type": "error", "code": "protocol", "message": str(exc)[:4000]})
                finally:
                    self._exit(2)
            for frame in frames:
                self._dispatch(frame)
            if not data:
                return

    def _dispatch(self, frame: dict[str, Any]) -> None:
        kind = frame["type"]
        if kind == "initialize":
            self.options = frame["options"]
            self.activation = frame["activation"]
            self.attempt_id = frame["attemptId"] or self.attempt_id
            if frame["heartbeatMs"] > 0:
                self.heartbeat_s = frame["heartbeatMs"] / 1000
            self._send(
                {
                    "type": "initialized",
                    "capabilities": self.capabilities,
                    "requestId": frame["requestId"],
                }
            )
            self._initialized.set()
            threading.Thread(target=self._tick_loop, daemon=True).start()
        elif kind == "prompt":
            turn = Turn(self, frame["turnId"], frame["text"], frame["requestId"])
            turn.artifact = frame.get("artifact")  # a text over 16 KiB: read before the handler
            self._prompts.put(turn)
        elif kind == "tool-result":
            waiting = self._pending_calls.get(frame["callId"])
            if waiting is not None:
                waiting.put((frame["ok"], frame["content"]))
        elif kind == "interrupt":
            current = self._current
            if current is not None and current.turn_id == frame["turnId"] and not self._stubborn:
                current.interrupted.set()
        elif kind in ("shutdown", "_eof", "error"):
            if self._stubborn:
                return
            if kind != "shutdown":
                self._exit(0)  # the Node is gone or gave up on us: nothing to report to
            self._stopping = True
            current = self._current
            if current is not None:
                current.interrupted.set()
            self._prompts.put(None)

    def _tick_loop(self) -> None:
        next_beat = time.monotonic()
        while True:
            with self._tick:
                if not len(self._diagnostics) and not self._diagnostics.dropped:
                    self._tick.wait(max(0.0, next_beat - time.monotonic()))
            if len(self._diagnostics) or self._diagnostics.dropped:
                time.sleep(DIAGNOSTIC_LINGER_S)  # let a burst coalesce into one batch
            with self._tick:
                batches = []
                while (batch := self._diagnostics.take_batch()) is not None:
                    batches.append(batch)
            if self._silent:
                next_beat = time.monotonic() + self.heartbeat_s
                continue
            for records, dropped in batches:
                self._send({"type": "observation-batch", "records": records, "dropped": dropped})
            if time.monotonic() >= next_beat:
                self._send({"type": "heartbeat"})
                next_beat = time.monotonic() + self.heartbeat_s

    def _run_turns(self, handler: Callable[[WorkerContext, Turn], None]) -> None:
        while True:
            turn = self._prompts.get()
            if turn is None:
                return
            self._current = turn
            turn.event("turn.started")
            try:
                if turn.artifact is not None:
                    turn.text = read_artifact(turn.artifact).decode("utf-8", "surrogatepass")
                    turn.artifact = None
                handler(self, turn)
            except Exception as exc:
                if not turn.ended:
                    turn.fail(f"{type(exc).__name__}: {exc}")
            else:
                if turn.ended:
                    pass
                elif turn.interrupted.is_set():
                    self._send(
                        {
                            "type": "interrupted",
                            "turnId": turn.turn_id,
                            "requestId": turn.request_id,
                        }
                    )
                else:
                    turn.complete()
            self._current = None
            if self._stopping:
                return


def run_worker(
    handler: Callable[[WorkerContext, Turn], None],
    *,
    name: str,
    version: str = "0",
    capabilities: list[str] | None = None,
) -> NoReturn:
    """Serve the worker protocol on stdin/stdout until shutdown or end of stdin, then exit.

    `handler(context, turn)` answers one prompt. It may raise: the turn fails with the
    exception's text. The process exits 0 after shutdown, 2 after a protocol error.
    """
    context = WorkerContext(name, version, list(capabilities or []))
    os.dup2(2, 1)  # fd 1 now reaches stderr; frames go to the private copy
    context._send({"type": "hello", "name": name, "pid": os.getpid()})
    threading.Thread(target=context._read_loop, daemon=True).start()
    context._run_turns(handler)
    while context._silent or context._stubborn:  # a test directive asked us to hang
        threading.Event().wait(3600)
    context._send({"type": "terminal", "reason": "shutdown"})
    context._exit(0)
