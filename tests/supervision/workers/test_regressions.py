"""Regressions found by the Session actor: overlapping launches, stops under cancellation,
and turns whose reader went away. Real echo workers on the real clock."""

from __future__ import annotations

from pathlib import Path

import trio
import trio.testing

from supervision.workers import (
    WorkerSpec,
    WorkerState,
    WorkerTimings,
    open_worker_supervisor,
)

ECHO = "worker_bridge.workers.echo"
SHORT = WorkerTimings(
    init_ms=5_000, heartbeat_ms=200, interrupt_ms=800, terminate_ms=800, kill_wait_ms=2_000
)


def echo_spec(tmp_path: Path) -> WorkerSpec:
    return WorkerSpec.python_module(ECHO, cwd=str(tmp_path))


def alive(pid: int) -> bool:
    """Whether /proc shows `pid` as a process that is not a zombie."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    return "State:\tZ" not in status


class OutOfOrderEpochs:
    """Issues epochs in call order but answers the first call last, as a storage group
    commit may: the second caller gets epoch 2 back while the first still waits for 1."""

    def __init__(self) -> None:
        self.issued = 0
        self.second_called = trio.Event()

    async def next_epoch(self) -> int:
        self.issued += 1
        epoch = self.issued
        if epoch == 1:
            with trio.move_on_after(1):  # serialized callers never get here concurrently
                await self.second_called.wait()
            await trio.sleep(0.05)
        else:
            self.second_called.set()
        return epoch


async def test_overlapping_launches_both_start_with_distinct_increasing_epochs(
    tmp_path: Path,
) -> None:
    """Two concurrent start_worker calls whose epochs come back out of order both start;
    neither is refused, and the epochs are distinct and ordered by issue."""
    source = OutOfOrderEpochs()
    with trio.fail_after(20):
        async with open_worker_supervisor(source, SHORT) as supervisor:
            handles = []

            async def launch() -> None:
                handles.append(await supervisor.start_worker(echo_spec(tmp_path)))

            async with trio.open_nursery() as nursery:
                nursery.start_soon(launch)
                await trio.testing.wait_all_tasks_blocked()  # the first call awaits its epoch
                nursery.start_soon(launch)
            for handle in handles:
                await handle.wait_initialized()
            assert sorted(h.epoch for h in handles) == [1, 2]
            assert all(h.state is WorkerState.READY for h in handles)
