"""One agent CLI as a child process of an adapter worker: JSON lines in, JSON lines out.

Stdlib only, like the worker SDK. The child runs in its own session and process group (an
agent spawns MCP servers and subagents: a stop kills the whole group). A reader thread turns
stdout into `Line`s on a bounded queue (a full queue stops reading, so a flooding harness
waits instead of growing memory); another keeps the last 64 KiB of stderr for failure
reasons and forwards each stderr line as a diagnostic. A stop also ends the descendants
that left the group (`_descendants`). Nothing the child prints can raise
in the worker: a non-JSON line or an oversized one becomes a `Line` of its own kind.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import signal
import subprocess
import threading

from ._agent_env import command_problem
from ._descendants import descendants, kill_escaped

# typing costs a worker ~20 ms of start-up: import it for the type checker only.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence
    from typing import Any

MAX_LINE_BYTES = 32 * 1024 * 1024  # Claude's initialize answer alone is ~100 KiB
STDERR_TAIL_BYTES = 64 * 1024
STDERR_PIECE_BYTES = 64 * 1024
QUEUE_LINES = 1024
QUEUE_BYTES = 16 * 1024 * 1024  # read ahead of the worker (one longer line is let through)
TERM_GRACE_S = 2.0
MAX_TRANSCRIPT_BYTES = 64 * 1024 * 1024


class HarnessMissing(Exception):
    """The harness binary could not be started (not installed, not executable)."""


class HarnessGone(Exception):
    """The harness's stdin is closed: it exited or is exiting."""


class Line:
    """What the reader saw: `json` (value is a dict), `garbage` (a non-JSON line, value its
    start), `oversized` (a line over MAX_LINE_BYTES, skipped; value None), or `eof` (stdout
    closed; value None). `size`: its bytes."""

    __slots__ = ("kind", "size", "value")

    def __init__(self, kind: str, value: Any, size: int = 0) -> None:
        self.kind = kind
        self.value = value
        self.size = size


def unreadable_line(line: Line) -> str:
    """What a `garbage` or `oversized` line was, for a failure reason."""
    if line.kind == "oversized":
        return f"printed a line longer than {MAX_LINE_BYTES} bytes"
    return f"printed a line that is not JSON: {line.value!r}"


class HarnessStatistics:
    """A snapshot: the bytes of stdout read but not yet taken by the worker, and whether
    the reader waits for room (the harness then waits on its full pipe)."""

    __slots__ = ("queued_bytes", "reader_waiting")

    def __init__(self, queued_bytes: int, reader_waiting: bool) -> None:
        self.queued_bytes = queued_bytes
        self.reader_waiting = reader_waiting


class HarnessProcess:
    """A running harness. `next_line(timeout)` returns a `Line` or None on timeout."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str],
        cwd: str | None = None,
        on_stderr: Callable[[str], None] | None = None,
        transcript: str | None = None,
    ) -> None:
        self.argv = list(argv)
        try:
            self.process = subprocess.Popen(
                self.argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=dict(env),
                cwd=cwd,
                start_new_session=True,
            )
        except OSError as exc:
            problem = command_problem(self.argv[0])
            raise HarnessMissing(
                problem or f"cannot start {self.argv[0]}: {exc.strerror or exc}"
            ) from exc
        self.pid = self.process.pid
        # A debugging aid (and the golden-transcript tests): every stdout line, as received.
        self._transcript = open(transcript, "ab") if transcript else None  # noqa: SIM115
        self._transcript_left = MAX_TRANSCRIPT_BYTES
        self._lines: queue.Queue[Line] = queue.Queue(QUEUE_LINES)
        # Bytes queued, and the reader's wait for room: lines of up to MAX_LINE_BYTES
        # parsed ahead of a worker that reads none (waiting on an approval) add up.
        self._queued = 0
        self._room = threading.Condition()
        self._closing = False
        self._waiting = False
        self._stderr = bytearray()
        self._stderr_lock = threading.Lock()
        self._write_lock = threading.Lock()
        self._on_stderr = on_stderr
        self._eof = False
        self._stderr_done = threading.Event()
        self._readers = [
            threading.Thread(target=self._read_stdout, daemon=True),
            threading.Thread(target=self._read_stderr, daemon=True),
        ]
        for reader in self._readers:
            reader.start()

    # -- reading --------------------------------------------------------------------

    def _read_stdout(self) -> None:
        assert self.process.stdout is not None
        stream = self.process.stdout
        while True:
            raw = stream.readline(MAX_LINE_BYTES + 1)
            if not raw:
                if self._transcript is not None:
                    self._transcript.close()
                self._lines.put(Line("eof", None))
                return
            if self._transcript is not None and self._transcript_left > 0:
                self._transcript.write(raw[: self._transcript_left])
                self._transcript.flush()
                self._transcript_left -= len(raw)
            if len(raw) > MAX_LINE_BYTES and not raw.endswith(b"\n"):
                while raw and not raw.endswith(b"\n"):  # skip the rest of the line
                    raw = stream.readline(MAX_LINE_BYTES)
                self._lines.put(Line("oversized", None))
                continue
            text = raw.decode("utf-8", "replace").strip()
            if not text:
                continue
            try:
                value = json.loads(text)
            except ValueError:
                value = None
            except RecursionError:
                value = None
            if isinstance(value, dict):
                self._put(Line("json", value, len(raw)))
            else:
                self._lines.put(Line("garbage", text[:200]))

    def _put(self, line: Line) -> None:
        """Queue `line` once the queued bytes leave room for it (an empty queue always
        does); a closing harness's lines are dropped instead of waited for."""
        with self._room:
            while self._queued and self._queued + line.size > QUEUE_BYTES and not self._closing:
                self._waiting = True
                self._room.wait()
            self._waiting = False
            if self._closing:
                return
            self._queued += line.size
        self._lines.put(line)

    def statistics(self) -> HarnessStatistics:
        with self._room:
            return HarnessStatistics(self._queued, self._waiting)

    def _read_stderr(self) -> None:
        assert self.process.stderr is not None
        stream = self.process.stderr
        at_line_start = True
        try:
            # In pieces: one stderr line may be any size (iterating the file would hold it
            # whole), and only its tail is kept. A diagnostic shows the start of each line.
            while raw := stream.readline(STDERR_PIECE_BYTES):
                with self._stderr_lock:
                    self._stderr += raw
                    del self._stderr[:-STDERR_TAIL_BYTES]
                if self._on_stderr is not None and at_line_start:
                    self._on_stderr(raw[:4096].decode("utf-8", "replace").rstrip("\n"))
                at_line_start = raw.endswith(b"\n")
        finally:
            self._stderr_done.set()

    def next_line(self, timeout: float) -> Line | None:
        """The next line within `timeout` seconds, else None. After `eof`, `eof` again."""
        if self._eof:
            return Line("eof", None)
        try:
            line = self._lines.get(timeout=timeout)
        except queue.Empty:
            return None
        if line.size:
            with self._room:
                self._queued -= line.size
                self._room.notify()
        if line.kind == "eof":
            self._eof = True
        return line

    def stderr_tail(self, limit: int = 2000) -> str:
        """The last `limit` characters of stderr (waits briefly for its last lines)."""
        if self.process.poll() is not None:
            self._stderr_done.wait(1.0)
        with self._stderr_lock:
            return self._stderr.decode("utf-8", "replace")[-limit:].strip()

    # -- writing and ending ---------------------------------------------------------

    def send(self, message: dict[str, Any]) -> None:
        """Write one JSON line. Raises `HarnessGone` if the harness no longer reads."""
        data = (json.dumps(message, ensure_ascii=False) + "\n").encode("utf-8")
        stdin = self.process.stdin
        assert stdin is not None
        with self._write_lock:
            try:
                stdin.write(data)
                stdin.flush()
            except (OSError, ValueError) as exc:
                raise HarnessGone(f"{self.argv[0]} no longer reads its input") from exc

    @property
    def alive(self) -> bool:
        return self.process.poll() is None and not self._eof

    def exit_status(self, wait_s: float = 2.0) -> int | None:
        try:
            return self.process.wait(wait_s)
        except subprocess.TimeoutExpired:
            return None

    def describe_exit(self) -> str:
        status = self.exit_status()
        if status is None:
            return "still running"
        if status < 0:
            return f"killed by signal {-status}"
        return f"exited with status {status}"

    def stop(self) -> None:
        """SIGTERM the process group, close its stdin, SIGKILL it after a grace (bounded);
        then close its pipes (once the readers have seen them end)."""
        with self._room:  # a reader waiting for room stops waiting
            self._closing = True
            self._room.notify_all()
        self._signal_group()
        for reader in self._readers:
            reader.join(1.0)
        for stream in (self.process.stdout, self.process.stderr):
            if stream is not None and not any(r.is_alive() for r in self._readers):
                stream.close()

    def _signal_group(self) -> None:
        # Listed before any signal: a command in a session of its own outlives the group
        # and, once its parent is gone, is no longer found under the harness.
        escaped = descendants(self.pid)
        # The signal first: a harness reads its stdin's end as an answer (Claude Code takes
        # it for a denial of the pending tool call and carries on) if it sees it before.
        self._kill_group(signal.SIGTERM)
        with contextlib.suppress(OSError):
            if self.process.stdin is not None:
                self.process.stdin.close()
        self.exit_status(TERM_GRACE_S)
        self._kill_group(signal.SIGKILL)  # the leader may be gone while its group lingers
        kill_escaped(escaped, self.pid)
        self.exit_status(TERM_GRACE_S)

    def _kill_group(self, sig: signal.Signals) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, sig)
