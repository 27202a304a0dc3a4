"""The bounded stop of one worker attempt, phase by phase.

interrupt and shutdown (if asked to be graceful) for the interrupt bound → SIGCONT and
SIGTERM to the process group for the terminate bound → SIGKILL to the group. Then, however
it ended, SIGKILL the group's leftovers and sweep the descendants that left the group
(`setsid`), found in the tree seen during the stop or by the attempt's marker variable.
"""

from __future__ import annotations

import signal
from collections.abc import Awaitable, Callable

import trio

from ._process_group import descendants, signal_group, sweep
from ._worker_config import WorkerTimings

MARKER = "MAIA_WORKER_ATTEMPT"


async def stop_process_tree(
    *,
    pid: int,
    attempt_id: str,
    exited: trio.Event,
    timings: WorkerTimings,
    ask: Callable[[], Awaitable[None]] | None,
) -> tuple[str, tuple[int, ...]]:
    """Stop worker `pid` (its process group has the same id) within the bounds of
    `timings`. `exited` is set by whoever reaps the worker; `ask` (if given) asks it to stop
    by protocol first. Returns the phase that ended it (`exited`, `interrupt`, `terminate`,
    `kill`) and the pids the sweep killed. Never raises for processes already gone."""
    phase = "exited"
    known = await trio.to_thread.run_sync(descendants, pid)
    if ask is not None and not exited.is_set():
        phase = "interrupt"
        await ask()
        with trio.move_on_after(timings.interrupt_ms / 1000):
            await exited.wait()
    if not exited.is_set():
        phase = "terminate"
        signal_group(pid, signal.SIGCONT)  # a stopped process cannot act on SIGTERM
        signal_group(pid, signal.SIGTERM)
        with trio.move_on_after(timings.terminate_ms / 1000):
            await exited.wait()
    if not exited.is_set():
        phase = "kill"
    known = [*known, *await trio.to_thread.run_sync(descendants, pid)]
    signal_group(pid, signal.SIGKILL)  # also the group's leftovers after a clean exit
    with trio.move_on_after(timings.kill_wait_ms / 1000):
        await exited.wait()
    swept = await trio.to_thread.run_sync(
        sweep, known, MARKER, attempt_id, timings.kill_wait_ms / 1000
    )
    return phase, tuple(swept)
