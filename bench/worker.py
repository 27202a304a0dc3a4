"""Worker benchmark: spawn → initialized, turn round trips, streamed event frames with acks.

`node_cpu_us_per_turn` and `node_cpu_us_per_flood_event` are this process's CPU (the Node's
side of a turn: handle, frame reader, consumer taking batches; the worker excluded).

Each Maia figure sits beside its raw primitive measured in the same run: a bare
`python -c pass` spawn of the same interpreter, and a raw NDJSON pipe echo (one line out,
one line back, no protocol).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import trio

from bench._report import Report, log, parse_args, percentile
from supervision.workers import (
    MemoryEpochSource,
    WorkerSpec,
    WorkerSupervisor,
    WorkerTimings,
    open_worker_supervisor,
)

PYTHON = os.path.abspath(sys.executable)
RAW_ECHO = (
    "import sys\n"
    "r, w = sys.stdin.buffer, sys.stdout.buffer\n"
    "for line in r:\n"
    "    w.write(line); w.flush()\n"
)


def median(samples: list[float]) -> float:
    return percentile(samples, 0.5)


async def bare_spawn(rounds: int) -> list[float]:
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        process = await trio.lowlevel.open_process([PYTHON, "-c", "pass"])
        await process.wait()
        samples.append((time.perf_counter() - start) * 1000)
    return samples


async def spawn_to_initialized(supervisor: WorkerSupervisor, rounds: int) -> list[float]:
    spec = WorkerSpec.python_module("worker_bridge.workers.echo", cwd=os.getcwd())
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        handle = await supervisor.start_worker(spec)
        await handle.wait_initialized()
        samples.append((time.perf_counter() - start) * 1000)
        await handle.stop("bench")
    return samples


async def raw_pipe(rounds: int) -> list[float]:
    process = await trio.lowlevel.open_process([PYTHON, "-c", RAW_ECHO], stdin=-1, stdout=-1)
    assert process.stdin is not None
    assert process.stdout is not None
    line = b'{"type":"prompt","turnId":"t","text":"hello"}\n'
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        await process.stdin.send_all(line)
        received = b""
        while not received.endswith(b"\n"):
            received += await process.stdout.receive_some(65536)
        samples.append((time.perf_counter() - start) * 1000)
    await process.stdin.aclose()
    await process.wait()
    return samples


class Round:
    """One round of turns then a flood: the round trips, the event rate, and this
    process's CPU (the Node's side: handle, frame reader, consumer; not the worker's)."""

    def __init__(self) -> None:
        self.samples: list[float] = []
        self.rate = 0.0
        self.cpu_us_per_turn = 0.0
        self.cpu_us_per_event = 0.0


async def turns_and_flood(supervisor: WorkerSupervisor, rounds: int, flood: int) -> Round:
    spec = WorkerSpec.python_module("worker_bridge.workers.echo", cwd=os.getcwd())
    handle = await supervisor.start_worker(spec)
    await handle.wait_initialized()
    result = Round()
    cpu = time.process_time()
    for index in range(rounds):  # a batch at a time, as the Session's pump takes them
        start = time.perf_counter()
        async for batch in handle.prompt(f"t{index}", "hello").batches():
            if batch[-1].final:
                assert batch[-1].kind == "completed", batch
        result.samples.append((time.perf_counter() - start) * 1000)
    result.cpu_us_per_turn = (time.process_time() - cpu) / rounds * 1e6
    start, cpu = time.perf_counter(), time.process_time()
    count = 0
    last = None
    async for event in handle.prompt("flood", f"/flood {flood}"):
        count += 1
        last = event
    elapsed = time.perf_counter() - start
    result.cpu_us_per_event = (time.process_time() - cpu) / count * 1e6
    assert last is not None
    assert last.kind == "completed", last
    await handle.stop("bench")
    result.rate = count / elapsed
    return result


async def main() -> None:
    args = parse_args(__doc__ or "worker")
    spawns, turns, flood, repeats = (10, 200, 20_000, 3) if args.quick else (30, 1000, 100_000, 5)
    report = Report("worker")
    timings = WorkerTimings(interrupt_ms=2_000, terminate_ms=2_000)
    async with open_worker_supervisor(MemoryEpochSource(), timings) as supervisor:
        log("warm-up")
        await bare_spawn(2)
        await spawn_to_initialized(supervisor, 2)
        log("spawn")
        bare, init = [], []
        for _ in range(repeats):  # interleave, so drift hits both alike
            bare.append(median(await bare_spawn(spawns // repeats)))
            init.append(median(await spawn_to_initialized(supervisor, spawns // repeats)))
        log("round trips")
        raw = await raw_pipe(turns)
        turn_samples, rates, turn_cpu, event_cpu = [], [], [], []
        for _ in range(repeats):
            one = await turns_and_flood(supervisor, turns // repeats, flood // repeats)
            turn_samples.extend(one.samples)
            rates.append(one.rate)
            turn_cpu.append(one.cpu_us_per_turn)
            event_cpu.append(one.cpu_us_per_event)
    report.figures["spawn_to_initialized_p50_ms"] = median(init)
    report.figures["bare_spawn_p50_ms"] = median(bare)
    report.figures["turn_rt_p50_ms"] = median(turn_samples)
    report.figures["turn_rt_p99_ms"] = percentile(turn_samples, 0.99)
    report.figures["raw_pipe_rt_p50_ms"] = median(raw)
    report.figures["event_frames_per_s"] = median(rates)
    report.figures["node_cpu_us_per_turn"] = median(turn_cpu)
    report.figures["node_cpu_us_per_flood_event"] = median(event_cpu)
    report.figures["spawn_overhead_p50_ms"] = median(init) - median(bare)
    report.ratios["turn_rt_vs_raw_pipe"] = median(raw) / median(turn_samples)
    report.ratios["bare_spawn_vs_spawn_to_initialized"] = median(bare) / median(init)
    load = os.getloadavg()[0]
    report.notes = (
        f"load average {load:.1f} on {os.cpu_count()} cores during the run; "
        f"{spawns} spawns, {turns} turns ('hello': started, delta, completed), "
        f"flood of {flood // repeats} deltas x{repeats} with cumulative acks; medians of rounds"
    )
    report.emit(args.json)


if __name__ == "__main__":
    trio.run(main)
