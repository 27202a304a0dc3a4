"""The bounded stop of one worker attempt, phase by phase.

interrupt and shutdown (if asked to be graceful) for the interrupt bound → SIGTERM then
SIGCONT to the process group for the terminate bound → SIGKILL to the group. Then, however
it ended, SIGKILL the group's leftovers and sweep the descendants that left the group
(`setsid`), found in the tree seen during the stop or by the attempt's marker variable.
"""

from __future__ import annotations

import signal
from collections.abc import Awaitable, Callable

import trio

from ._process_group import ATTEMPT_MARKER, descendants, signal_group, sweep
from ._worker_config import WorkerTimings

MARKER = ATTEMPT_MARKER


async def stop_process_tree(
    *,
    process: trio.Process,
    attempt_id: str,
    timings: WorkerTimings,
    ask: Callable[[], Awaitable[None]] | None,
) -> tuple[str, tuple[int, ...]]:
    """Stop worker `process` (its process group has its pid) within the bounds of `timings`;
    `ask` (if given) asks it to stop by protocol first. Returns the phase that ended it
    (`exited`, `interrupt`, `terminate`, `kill`) and the pids the sweep killed. Shielded
    from cancellation (every wait in it is bounded): a Node shutting down must still stop
    its workers. Never raises for processes already gone."""
    with trio.CancelScope(shield=True):
        async with trio.open_nursery() as nursery:
            exited = trio.Event()

            async def reap() -> None:
                await process.wait()
                exited.set()

            nursery.start_soon(reap)
            result = await _phases(process.pid, attempt_id, exited, timings, ask)
            nursery.cancel_scope.cancel()  # a process stuck in D state is left to the report
    return result


async def _phases(
    pid: int,
    attempt_id: str,
    exited: trio.Event,
    timings: WorkerTimings,
    ask: Callable[[], Awaitable[None]] | None,
) -> tuple[str, tuple[int, ...]]:
    phase = "exited"
    known = await trio.to_thread.run_sync(descendants, pid)
    if ask is not None and not exited.is_set():
        phase = "interrupt"
        with trio.move_on_after(timings.interrupt_ms / 1000):
            await ask()  # within the bound: a worker that stopped reading fills its pipe
            await exited.wait()
    if not exited.is_set():
        phase = "terminate"
        # TERM before CONT: a stopped process keeps the TERM pending and dies of it as it
        # is continued, before it runs again (CONT first would let it read and start work).
        signal_group(pid, signal.SIGTERM)
        signal_group(pid, signal.SIGCONT)
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
