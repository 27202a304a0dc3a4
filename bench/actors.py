"""Actor runtime benchmark: tell and ask beside a raw trio memory channel, memory per idle
live actor (10k and 100k, measured with tracemalloc: Python heap bytes, RSS delta also
reported), and spawn rate through a registry.

Run from the repository root: `python bench/actors.py [--json] [--quick]`.
"""

from __future__ import annotations

import gc
import statistics
import sys
import time
import tracemalloc
from collections.abc import Awaitable, Callable
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import psutil
import trio
import trio.testing

from actors import Actor, ActorRegistry
from bench._report import Report, log, parse_args

CAPACITY = 256


async def _tell(n: int) -> float:
    count = 0
    done = trio.Event()

    async def handle(_: int) -> None:
        nonlocal count
        count += 1
        if count == n:
            done.set()

    actor: Actor[int, None] = Actor("bench", handle, capacity=CAPACITY)
    async with trio.open_nursery() as nursery:
        await nursery.start(actor.serve)
        start = time.perf_counter()
        for i in range(n):
            await actor.tell(i)
        await done.wait()
        elapsed = time.perf_counter() - start
        actor.close()
    return n / elapsed


async def _raw_send(n: int) -> float:
    send, receive = trio.open_memory_channel[int](CAPACITY)
    done = trio.Event()

    async def consume() -> None:
        count = 0
        async for _ in receive:
            count += 1
            if count == n:
                done.set()
                return

    async with trio.open_nursery() as nursery:
        nursery.start_soon(consume)
        start = time.perf_counter()
        for i in range(n):
            await send.send(i)
        await done.wait()
        return n / (time.perf_counter() - start)


async def _ask(n: int) -> float:
    async def handle(value: int) -> int:
        return value

    actor: Actor[int, int] = Actor("bench", handle, capacity=CAPACITY)
    async with trio.open_nursery() as nursery:
        await nursery.start(actor.serve)
        start = time.perf_counter()
        for i in range(n):
            await actor.ask(i)
        elapsed = time.perf_counter() - start
        actor.close()
    return n / elapsed


async def _raw_pingpong(n: int) -> float:
    req_send, req_receive = trio.open_memory_channel[int](1)
    rep_send, rep_receive = trio.open_memory_channel[int](1)

    async def serve() -> None:
        async for value in req_receive:
            await rep_send.send(value)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(serve)
        start = time.perf_counter()
        for i in range(n):
            await req_send.send(i)
            await rep_receive.receive()
        elapsed = time.perf_counter() - start
        nursery.cancel_scope.cancel()
    return n / elapsed


async def _spawn_handler(_: str) -> Callable[[int], Awaitable[int]]:
    async def handle(value: int) -> int:
        return value

    return handle


async def _idle_actors(n: int, traced: bool) -> tuple[float, float, float]:
    """(tracemalloc bytes per actor or NaN, RSS bytes per actor, spawns per second)."""
    registry: ActorRegistry[int, int] = ActorRegistry("bench", _spawn_handler, max_live=n + 1)
    process = psutil.Process()
    async with trio.open_nursery() as nursery:
        await nursery.start(registry.serve)
        gc.collect()
        rss_before = process.memory_info().rss
        if traced:
            tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        start = time.perf_counter()
        for i in range(n):
            await registry.tell(f"agg_{i}", i)
        await trio.testing.wait_all_tasks_blocked()  # every actor handled its message: idle
        spawn_rate = n / (time.perf_counter() - start)
        gc.collect()
        heap = tracemalloc.get_traced_memory()[0] - before if traced else float("nan")
        tracemalloc.stop()
        rss = process.memory_info().rss - rss_before
        assert registry.statistics().live == n
        nursery.cancel_scope.cancel()
    return heap / n, rss / n, spawn_rate


def main() -> None:
    args = parse_args(__doc__ or "")
    rounds = 3 if args.quick else 9
    n = 10_000 if args.quick else 200_000
    n_ask = 2_000 if args.quick else 50_000
    report = Report("actors")
    # Maia's figure and the raw one alternate round by round, and each ratio is the median
    # of per-round ratios: on a shared machine the load drifts between rounds.
    for key, raw_key, ratio_key, ours, raw, count in (
        ("tell_per_s", "raw_send_per_s", "tell_vs_raw", _tell, _raw_send, n),
        ("ask_per_s", "raw_pingpong_per_s", "ask_vs_raw", _ask, _raw_pingpong, n_ask),
    ):
        log(f"{key} vs {raw_key} ...")
        trio.run(ours, count // 10)  # warm-up
        trio.run(raw, count // 10)
        pairs = [(trio.run(ours, count), trio.run(raw, count)) for _ in range(rounds)]
        report.figures[key] = statistics.median(a for a, _ in pairs)
        report.figures[raw_key] = statistics.median(b for _, b in pairs)
        report.ratios[ratio_key] = statistics.median(a / b for a, b in pairs)
    # Spawn rate without tracemalloc (it slows allocation ~4x), then memory with it. In
    # --quick both memory figures are the RSS delta: tracing alone would take ~35 s.
    for count, key in ((10_000, "10k"), (100_000, "100k")):
        log(f"{count} idle actors ...")
        heap_traced = not args.quick
        _, rss, spawn = trio.run(_idle_actors, count, False)
        report.figures[f"spawn_per_s_{key}"] = spawn
        report.figures[f"rss_bytes_per_idle_actor_{key}"] = rss
        if heap_traced:
            heap, _, _ = trio.run(_idle_actors, count, True)
            report.figures[f"bytes_per_idle_actor_{key}"] = heap
        else:
            report.figures[f"bytes_per_idle_actor_{key}"] = rss
    report.figures["spawn_per_s"] = report.figures["spawn_per_s_10k"]
    report.notes = (
        f"one producer, mailbox/channel capacity {CAPACITY}; ask is sequential round trips; "
        "bytes_per_idle_actor_* = tracemalloc Python-heap bytes per live idle actor spawned "
        "through an ActorRegistry (actor, task, coroutine frames, registry slot); rss_* = RSS "
        "delta of the same run (coarse, allocator overhead included); spawn_per_s_* = "
        "registry.tell to a new ID until every actor handled its first message"
        + ("; --quick: bytes_per_idle_actor_* are the RSS figures" if args.quick else "")
    )
    report.emit(args.json)


if __name__ == "__main__":
    main()
