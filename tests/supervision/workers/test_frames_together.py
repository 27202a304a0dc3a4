"""A real echo worker's frames as the Node receives them: a slow turn's `started` arrives
before its output exists, and a flood of events with heartbeats keeps sequence order."""

from __future__ import annotations

from pathlib import Path

import trio

from supervision.workers import (
    MemoryEpochSource,
    TurnEvent,
    WorkerHandle,
    WorkerSpec,
    WorkerState,
    WorkerTimings,
    open_worker_supervisor,
)

ECHO = "worker_bridge.workers.echo"
# No heartbeat within a test's turns: the worker writes only what the turns make it write.
QUIET = WorkerTimings(
    init_ms=10_000, heartbeat_ms=60_000, interrupt_ms=5_000, terminate_ms=2_000,
    kill_wait_ms=2_000,
)  # fmt: skip
TURNS = 10


def _writes(pid: int) -> int:
    """The write syscalls process `pid` has made (/proc/PID/io `syscw`: every thread)."""
    for line in Path(f"/proc/{pid}/io").read_text().splitlines():
        if line.startswith("syscw:"):
            return int(line.split()[1])
    raise AssertionError("no syscw in /proc/PID/io")


async def _batches(handle: WorkerHandle, turn_id: str, text: str) -> list[tuple[TurnEvent, ...]]:
    return [batch async for batch in handle.prompt(turn_id, text).batches()]


async def test_a_slow_turns_started_arrives_while_its_output_does_not_exist_yet(
    tmp_path: Path,
) -> None:
    """A turn that sleeps a minute before any output: its `started` reaches the Node alone
    within the test's bound (far under the minute), the turn still running; an interrupt
    then ends it. Holding `started` for the turn's next frame would time the test out."""
    spec = WorkerSpec.python_module(ECHO, cwd=str(tmp_path), env={})
    with trio.fail_after(40):
        async with open_worker_supervisor(MemoryEpochSource(), QUIET) as supervisor:
            handle = await supervisor.start_worker(spec)
            await handle.wait_initialized()
            batches = handle.prompt("slow", "/sleep 60000 late").batches()
            first = await batches.__anext__()
            assert [event.kind for event in first] == ["started"]
            assert handle.state is WorkerState.BUSY  # the turn runs on, no output yet
            assert await handle.interrupt("slow")
            rest = [event for batch in [b async for b in batches] for event in batch]
            assert [event.kind for event in rest] == ["interrupted"]
            await handle.stop("done")


async def test_queued_events_and_frames_written_at_once_keep_sequence_order(
    tmp_path: Path,
) -> None:
    """A flood of deltas (queued for the worker's writer) while heartbeats every 20 ms
    and the turn's end are written at once by their own threads: the Node, which fences
    any frame out of sequence, takes every event in order and the worker stays unfenced."""
    spec = WorkerSpec.python_module(ECHO, cwd=str(tmp_path), env={})
    beating = WorkerTimings(init_ms=10_000, heartbeat_ms=20, missed_heartbeats=500,
                            interrupt_ms=5_000, terminate_ms=2_000, kill_wait_ms=2_000)  # fmt: skip
    with trio.fail_after(60):
        async with open_worker_supervisor(MemoryEpochSource(), beating) as supervisor:
            handle = await supervisor.start_worker(spec)
            await handle.wait_initialized()
            for number in range(3):
                turn = await _batches(handle, f"flood-{number}", "/flood 3000")
                events = [event for batch in turn for event in batch]
                assert [e.text for e in events if e.kind == "delta"] == [
                    str(i) for i in range(3000)
                ]
                assert events[-1].kind == "completed"
                sequences = [event.sequence for event in events]
                assert sequences == sorted(set(sequences))
            assert handle.fence_reason is None
            await handle.stop("done")
