"""Regressions found by the Session actor: overlapping launches, stops under cancellation,
and turns whose reader went away. Real echo workers on the real clock."""

from __future__ import annotations

from pathlib import Path

import trio
import trio.lowlevel
import trio.testing

from supervision.workers import (
    ExitInfo,
    MemoryEpochSource,
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


async def test_a_stop_requested_under_cancellation_still_runs_and_returns(tmp_path: Path) -> None:
    """A caller already being cancelled that asks for stop() gets the finished stop back:
    the worker was asked, exited, and is gone, before Cancelled reaches the caller."""
    with trio.fail_after(20):
        async with open_worker_supervisor(MemoryEpochSource(), SHORT) as supervisor:
            handle = await supervisor.start_worker(echo_spec(tmp_path))
            await handle.wait_initialized()
            returned: list[ExitInfo] = []
            with trio.CancelScope() as scope:
                scope.cancel()
                returned.append(await handle.stop("cancelled caller"))
                await trio.lowlevel.checkpoint()  # only here does the cancel land
            assert scope.cancelled_caught
            assert returned == [handle.exit_info]
            assert returned[0].returncode == 0
            assert returned[0].stop_phase == "interrupt"
            assert handle.state is WorkerState.EXITED
            assert not alive(handle.pid)


async def test_a_cancelled_stop_escalates_to_sigkill_within_its_bounds(tmp_path: Path) -> None:
    """Under cancellation a worker ignoring interrupt, shutdown and SIGTERM is still taken
    through every phase: stop() returns once SIGKILL ended it, and its turn is lost."""
    with trio.fail_after(20):
        async with open_worker_supervisor(MemoryEpochSource(), SHORT) as supervisor:
            handle = await supervisor.start_worker(echo_spec(tmp_path))
            await handle.wait_initialized()
            stubborn = [event.kind async for event in handle.prompt("t1", "/ignore-term x")]
            assert stubborn[-1] == "completed"
            events = handle.prompt("t2", "/sleep 60000 never")
            assert (await events.__anext__()).kind == "started"
            returned: list[ExitInfo] = []
            with trio.CancelScope() as scope:
                scope.cancel()
                returned.append(await handle.stop("cancelled caller"))
            assert returned[0].stop_phase == "kill"
            assert returned[0].signal == 9
            assert not alive(handle.pid)
            assert [event.kind async for event in events] == ["lost"]


async def test_stop_all_under_an_outer_cancel_stops_every_worker(tmp_path: Path) -> None:
    """stop_all called by a task that is being cancelled (no shield of its own) still
    stops every live worker before it returns."""
    with trio.fail_after(20):
        async with open_worker_supervisor(MemoryEpochSource(), SHORT) as supervisor:
            handles = [await supervisor.start_worker(echo_spec(tmp_path)) for _ in range(3)]
            for handle in handles:
                await handle.wait_initialized()
            with trio.CancelScope() as scope:
                scope.cancel()
                await supervisor.stop_all("outer cancel")
            assert supervisor.live() == []
            assert all(h.exit_info is not None and h.exit_info.returncode == 0 for h in handles)
            assert not any(alive(h.pid) for h in handles)


async def test_a_turn_ending_after_its_reader_closed_is_quiet(tmp_path: Path) -> None:
    """A reader that closed its iterator mid-turn: the worker's `completed` then has nobody
    to go to, and ending the turn neither raises into the supervisor nor wedges the handle."""
    with trio.fail_after(20):
        async with open_worker_supervisor(MemoryEpochSource(), SHORT) as supervisor:
            handle = await supervisor.start_worker(echo_spec(tmp_path))
            await handle.wait_initialized()
            events = handle.prompt("t1", "/sleep 300 late")
            assert (await events.__anext__()).kind == "started"
            await events.aclose()
            await handle.wait_turn_ended()  # the completed arrived with no reader
            assert handle.state is WorkerState.READY
            kinds = [event.kind async for event in handle.prompt("t2", "next")]
            assert kinds[-1] == "completed"
            assert handle.fence_reason is None


async def test_a_turn_lost_after_its_reader_was_cancelled_is_quiet(tmp_path: Path) -> None:
    """A reader cancelled mid-turn (its receive side closed), then the worker stopped
    mid-turn: the turn's `lost` has nobody to go to; the stop still returns cleanly."""
    with trio.fail_after(20):
        async with open_worker_supervisor(MemoryEpochSource(), SHORT) as supervisor:
            handle = await supervisor.start_worker(echo_spec(tmp_path))
            await handle.wait_initialized()
            seen: list[str] = []
            started = trio.Event()

            async def read() -> None:
                async for event in handle.prompt("t1", "/sleep 60000 never"):
                    seen.append(event.kind)
                    started.set()

            async with trio.open_nursery() as nursery:
                nursery.start_soon(read)
                await started.wait()
                nursery.cancel_scope.cancel()
            assert seen == ["started"]
            assert handle.statistics().state is WorkerState.BUSY  # the worker still runs it
            info = await handle.stop("reader gone")
            assert info.stop_phase == "interrupt"
            assert handle.state is WorkerState.EXITED
        assert handle.fence_reason is None


async def test_events_closed_before_their_first_step_withdraw_the_turn(tmp_path: Path) -> None:
    """A reader that closes a turn's events before reading any: the prompt is never sent,
    the handle is ready again at once, and the next turn is the only one the worker ran."""
    log = tmp_path / "echo.log"
    spec = WorkerSpec.python_module(ECHO, cwd=str(tmp_path), env={"MAIA_ECHO_LOG": str(log)})
    with trio.fail_after(20):
        async with open_worker_supervisor(MemoryEpochSource(), SHORT) as supervisor:
            handle = await supervisor.start_worker(spec)
            await handle.wait_initialized()
            events = handle.prompt("t1", "never sent")
            await events.aclose()
            assert handle.state is WorkerState.READY
            with trio.fail_after(1):
                await handle.wait_turn_ended()
            assert [event async for event in events] == []
            kinds = [event.kind async for event in handle.prompt("t2", "sent")]
            assert kinds[-1] == "completed"
    assert [line.split()[0] for line in log.read_text().splitlines()] == ["t2"]
