"""`WorkerHandle.abandon`: a turn the worker has taken (an event of it was read) is not
given up and the worker is left alone; one it has not taken (frozen with SIGSTOP, the
prompt in its pipe) fences the worker, whose turn then ends `lost` and which never starts
it (real echo worker processes, real clock)."""

from __future__ import annotations

import contextlib
import os
import signal
from pathlib import Path

import trio
import trio.testing

from supervision.workers import (
    MemoryEpochSource,
    WorkerSpec,
    WorkerState,
    WorkerTimings,
    open_worker_supervisor,
)

ECHO = "worker_bridge.workers.echo"
TIMINGS = WorkerTimings(init_ms=20_000, interrupt_ms=2_000, terminate_ms=5_000)


def _spec(tmp_path: Path, log: Path) -> WorkerSpec:
    return WorkerSpec.python_module(ECHO, cwd=str(tmp_path), env={"MAIA_ECHO_LOG": str(log)})


async def test_a_taken_turn_is_not_abandoned(tmp_path: Path) -> None:
    """After `started` was read, abandon is False: the worker is not fenced and the turn
    runs to its end."""
    log = tmp_path / "echo.log"
    with trio.fail_after(60):
        async with open_worker_supervisor(MemoryEpochSource(), TIMINGS) as supervisor:
            handle = await supervisor.start_worker(_spec(tmp_path, log))
            await handle.wait_initialized()
            kinds = []
            async with contextlib.aclosing(handle.prompt("t1", "/sleep 300 done")) as events:
                async for event in events:
                    kinds.append(event.kind)
                    if event.kind == "started":
                        assert handle.abandon("t1", "too late") is False
            assert kinds[0] == "started"
            assert kinds[-1] == "completed"
            assert handle.statistics().fence_reason is None
            assert handle.abandon("t1", "ended") is False  # no longer the running turn
            await handle.stop("done")


async def test_an_untaken_turn_fences_the_frozen_worker(tmp_path: Path) -> None:
    """The prompt written to a SIGSTOPped worker: abandon is True, the worker is fenced and
    stopped (it dies of the TERM it finds as it is continued), the turn ends lost, and the
    echo log shows it never started it."""
    log = tmp_path / "echo.log"
    kinds: list[str] = []
    with trio.fail_after(60):
        async with open_worker_supervisor(MemoryEpochSource(), TIMINGS) as supervisor:
            handle = await supervisor.start_worker(_spec(tmp_path, log))
            await handle.wait_initialized()
            os.kill(handle.pid, signal.SIGSTOP)
            try:

                async def consume() -> None:
                    async for event in handle.prompt("t1", "never"):
                        kinds.append(event.kind)

                async with trio.open_nursery() as nursery:
                    nursery.start_soon(consume)
                    await trio.testing.wait_all_tasks_blocked()  # the prompt is in the pipe
                    assert kinds == []
                    assert handle.abandon("t1", "given up") is True
                info = await handle.wait_stopped()
            finally:
                if handle.state is not WorkerState.EXITED:
                    os.kill(handle.pid, signal.SIGKILL)
    assert kinds == ["lost"]
    assert info.fence_reason == "given up"
    assert info.signal == signal.SIGTERM
    assert not log.exists()  # it never started the turn
