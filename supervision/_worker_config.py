"""What a worker launch needs: its timings, its spec (argv, cwd, environment), its epochs.

Timings default to the spec's (Worker protocol, Timing); tests shorten them. Epochs come
from an injected `EpochSource` so the Node can persist them through storage: an epoch is
never reused, even across Node restarts. Two simple sources live here: in memory (tests)
and a small file (tests and single-process tools).
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Protocol

import attrs
import trio

from maia.core import MaiaError
from worker_bridge import (
    HEARTBEAT_INTERVAL_MS,
    INIT_TIMEOUT_MS,
    INTERRUPT_GRACE_MS,
    MISSED_HEARTBEATS,
    TERMINATE_GRACE_MS,
)

# Variables a worker inherits from the Node; everything else must be named in the spec.
INHERITED_ENV = ("PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR")


@attrs.frozen
class WorkerTimings:
    """Every bound of a worker's life, in milliseconds."""

    init_ms: int = INIT_TIMEOUT_MS
    heartbeat_ms: int = HEARTBEAT_INTERVAL_MS
    missed_heartbeats: int = MISSED_HEARTBEATS
    interrupt_ms: int = INTERRUPT_GRACE_MS
    terminate_ms: int = TERMINATE_GRACE_MS
    kill_wait_ms: int = 5_000  # after SIGKILL: a process in D state may take a moment

    @property
    def heartbeat_deadline_ms(self) -> int:
        return self.heartbeat_ms * self.missed_heartbeats

    @property
    def stop_bound_ms(self) -> int:
        """The longest a bounded stop can take: the interrupt and terminate bounds, the wait
        after SIGKILL and the sweep's (each `kill_wait_ms`), 1 s to close the pipes, 1 s of
        slack for the thread hops."""
        return self.interrupt_ms + self.terminate_ms + 2 * self.kill_wait_ms + 2_000


@attrs.frozen
class WorkerSpec:
    """How to launch one worker. `argv[0]` must be an absolute path."""

    argv: tuple[str, ...]
    cwd: str
    env: Mapping[str, str] = attrs.field(factory=dict)
    options: Mapping[str, str] = attrs.field(factory=dict)
    activation: Mapping[str, object] = attrs.field(factory=dict)

    @classmethod
    def python_module(
        cls, module: str, *, cwd: str, env: Mapping[str, str] | None = None, **kwargs: object
    ) -> WorkerSpec:
        """A worker run as `<this interpreter> -m module` (e.g. `worker_bridge.workers.echo`)."""
        interpreter = os.path.abspath(sys.executable)
        return cls(argv=(interpreter, "-m", module), cwd=cwd, env=dict(env or {}), **kwargs)  # type: ignore[arg-type]

    def check(self) -> None:
        """Raises `MaiaError(configuration_invalid)` naming what is wrong."""
        if not self.argv or not os.path.isabs(self.argv[0]):
            raise MaiaError(
                "configuration_invalid",
                "configuration is invalid: worker argv[0] must be an absolute path",
                {"detail": "argv[0]"},
            )
        if not os.path.isdir(self.cwd):
            raise MaiaError(
                "configuration_invalid",
                f"configuration is invalid: worker cwd {self.cwd!r} is not a directory",
                {"detail": "cwd"},
            )

    def environment(
        self, *, epoch: int, attempt_id: str, heartbeat_ms: int, scope: str | None = None
    ) -> dict[str, str]:
        """The filtered environment: a few inherited variables, the spec's, and ours (the
        attempt marker, and the supervisor's scope marker when it has one)."""
        env = {key: os.environ[key] for key in INHERITED_ENV if key in os.environ}
        env.update(self.env)
        env.update(
            PYTHONUNBUFFERED="1",
            MAIA_WORKER_EPOCH=str(epoch),
            MAIA_WORKER_ATTEMPT=attempt_id,
            MAIA_WORKER_HEARTBEAT_MS=str(heartbeat_ms),
        )
        env.pop("MAIA_WORKER_SCOPE", None)  # only the supervisor says whose worker it is
        if scope is not None:
            env["MAIA_WORKER_SCOPE"] = scope
        return env


class EpochSource(Protocol):
    """Hands out epochs, each strictly greater than every one before, never reused."""

    async def next_epoch(self) -> int: ...


@attrs.define
class MemoryEpochSource:
    """Epochs from a counter (forgotten on restart: for tests only)."""

    last: int = 0

    async def next_epoch(self) -> int:
        self.last += 1
        return self.last


@attrs.define
class FileEpochSource:
    """Epochs persisted in a small file (write to a temporary, fsync, rename)."""

    path: Path
    _lock: threading.Lock = attrs.field(factory=threading.Lock, init=False, repr=False)

    async def next_epoch(self) -> int:
        return await trio.to_thread.run_sync(self._next)

    def _next(self) -> int:
        with self._lock:  # two launches at once must not read the same last epoch
            return self._next_locked()

    def _next_locked(self) -> int:
        try:
            last = int(self.path.read_text(encoding="ascii").strip() or "0")
        except FileNotFoundError:
            last = 0
        epoch = last + 1
        temporary = self.path.with_suffix(".tmp")
        with open(temporary, "w", encoding="ascii") as handle:
            handle.write(f"{epoch}\n")
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, self.path)
        return epoch
