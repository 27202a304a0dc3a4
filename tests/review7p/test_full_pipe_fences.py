"""End to end, with a real echo worker process: a worker that stops reading its stdin
(SIGSTOP) while the Node writes a prompt larger than the pipe holds (the pipe shrunk to one
page with F_SETPIPE_SZ) is fenced at the write bound (the interrupt bound, s7-pipe's
`write_bound_s`), the turn is lost naming the write, and the worker is killed."""

from __future__ import annotations

import fcntl
import os
import signal
from pathlib import Path

import trio

from supervision.workers import MemoryEpochSource, WorkerTimings, open_worker_supervisor
from tests.supervision.workers.test_real_workers import alive, echo_spec, turn

F_SETPIPE_SZ = 1031  # Linux fcntl
TIMINGS = WorkerTimings(
    init_ms=5_000, heartbeat_ms=10_000, interrupt_ms=800, terminate_ms=800, kill_wait_ms=2_000
)


async def test_a_worker_that_stops_reading_is_fenced_at_the_write_bound(tmp_path: Path) -> None:
    """SIGSTOP, then a 15 KB prompt into a one-page pipe: the turn ends lost, the fence names
    the unwritten frame (not missed heartbeats: those take 30 s), the worker is gone."""
    with trio.fail_after(30):
        async with open_worker_supervisor(MemoryEpochSource(), TIMINGS) as supervisor:
            handle = await supervisor.start_worker(echo_spec(tmp_path))
            await handle.wait_initialized()
            fd = handle.stream._send_stream.fileno()  # type: ignore[attr-defined]
            fcntl.fcntl(fd, F_SETPIPE_SZ, 4096)
            os.kill(handle.pid, signal.SIGSTOP)
            try:
                events = await turn(handle, "t", "z" * 15_000)
                info = await handle.wait_stopped()
            finally:
                if alive(handle.pid):
                    os.kill(handle.pid, signal.SIGCONT)
    assert events[-1].kind == "lost"
    assert info.fence_reason is not None
    assert "could not be written within 800 ms" in info.fence_reason
    assert not alive(handle.pid)
