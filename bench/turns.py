"""Turns end to end inside the Node: handlers → Session actors → storage → echo workers.

Two measurements, each after a warm-up, on a real SQLite file (synchronous=FULL, the Node's
setting) with real echo worker processes:
  * turns_per_s_50_sessions: 50 Sessions, each keeping 4 turns in flight, for a fixed count;
  * send_to_completed_p50_ms / p99_ms: one Session, one turn at a time, from the turn.send
    handler's call to turn.wait answering completed.
The raw primitive beside it: a round trip of one prompt to an echo worker on its own (the
worker handle, no storage), so the ratio shows what storage and the actors add.

With `--api`: a real Node process (`python -m maia.node start`) on a temporary home, driven
over the WebSocket API by the SDK (`send_and_wait`: one `turn.send` that waits for the end),
50 Sessions x 4 in flight over 8 connections; `node_cpu_ms_per_turn_50` is the Node
process's own CPU (utime + stime of /proc/PID/stat, all its threads, not its workers) over
the measured run divided by its turns (`node_sys_cpu_ms_per_turn_50`: the kernel's part of
it, fsyncs and pipe and socket writes among it; `node_main_thread_cpu_ms_per_turn_50`: its
trio loop's thread alone, the rest being the storage writer's and readers' threads; since
session 13 the trio thread runs the storage batches' fns too, the writer thread only COMMITs).
Profiling: `MAIA_BENCH_PYSPY=FILE` records the Node with py-spy (collapsed stacks; install it
into .venv by hand, it is no dependency) during the measured run, `MAIA_BENCH_PYSPY_GIL=1`
only the thread holding the GIL, `MAIA_BENCH_PYSPY_IDLE=1` idle
threads' samples too, `MAIA_BENCH_PYSPY_PHASE=latency` the one-in-flight run
instead; `MAIA_BENCH_PER_LANE=N` lengthens the run.

With `--instructions`: the same Node started under valgrind's callgrind with its
instrumentation off (workers are not traced), one Session driven one turn at a time, and
`callgrind_control` turning the count on around the measured turns only (after 10 warm-up
turns); prints `node_instructions_per_turn_1` (every thread of the Node) and
`node_main_thread_instructions_per_turn_1` (its trio thread). Instructions do not move with
the machine's load as CPU time does (what waits for a timer or a read still may: compare
trees interleaved). `MAIA_BENCH_TURNS=N` sets the measured turns (200, `--quick` 100).
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import trio

from bench._pages import frames_during
from bench._report import Report, log, parse_args, percentile
from maia.config import UserConfig
from maia.protocol import REGISTRY, SystemClock, decode_input
from maia.service import ServiceContext, open_services
from maia.service._projects import project_add
from maia.service._sessions import session_create
from maia.service._turns import turn_send, turn_wait
from storage import open_storage
from supervision.workers import MemoryEpochSource, WorkerSpec, open_worker_supervisor


def _params(op_id: str, body: dict[str, Any]) -> Any:
    descriptor = REGISTRY.get(op_id)
    assert descriptor is not None
    return decode_input(descriptor, body)


class Counter:
    def __init__(self) -> None:
        self.value = 0

    def next(self, prefix: str) -> str:
        self.value += 1
        return f"{prefix}-{self.value}"


async def _sessions(ctx: ServiceContext, root: Path, count: int, ids: Counter) -> list[str]:
    out = await project_add(
        ctx, _params("project.add", {"commandId": ids.next("p"), "rootPath": str(root)})
    )
    project_id = out.project.project_id
    sessions = []
    for _ in range(count):
        created = await session_create(
            ctx, _params("session.create", {"commandId": ids.next("s"), "projectId": project_id})
        )
        sessions.append(created.session.session_id)
    return sessions


async def _one_turn(ctx: ServiceContext, session_id: str, ids: Counter) -> float:
    started = time.perf_counter()
    sent = await turn_send(
        ctx,
        _params("turn.send", {"commandId": ids.next("t"), "sessionId": session_id, "text": "hi"}),
    )
    while True:
        done = await turn_wait(
            ctx, _params("turn.wait", {"turnId": sent.turn.turn_id, "states": ["completed"]})
        )
        if done.satisfied:
            return (time.perf_counter() - started) * 1000


async def _throughput(ctx: ServiceContext, sessions: list[str], per_session: int,
                      ids: Counter) -> float:  # fmt: skip
    async def drive(session_id: str) -> None:
        async with trio.open_nursery() as lanes:
            for _ in range(4):  # four turns in flight per Session
                lanes.start_soon(lane, session_id)

    async def lane(session_id: str) -> None:
        for _ in range(per_session // 4):
            await _one_turn(ctx, session_id, ids)

    started = time.perf_counter()
    async with trio.open_nursery() as nursery:
        for session_id in sessions:
            nursery.start_soon(drive, session_id)
    elapsed = time.perf_counter() - started
    return len(sessions) * (per_session // 4) * 4 / elapsed


async def _raw_round_trips(root: Path, count: int) -> list[float]:
    samples = []
    async with open_worker_supervisor(MemoryEpochSource()) as workers:
        handle = await workers.start_worker(
            WorkerSpec.python_module("worker_bridge.workers.echo", cwd=str(root))
        )
        await handle.wait_initialized()
        for number in range(count):
            started = time.perf_counter()
            async for event in handle.prompt(f"turn-{number}", "hi"):
                if event.final:
                    break
            samples.append((time.perf_counter() - started) * 1000)
        await handle.stop()
    return samples


async def _pages_per_turn(ctx: ServiceContext, db: Path, session_id: str, ids: Counter,
                          turns: int) -> float:  # fmt: skip
    """WAL frames (pages) written per turn, one turn in flight: the mean over `turns`
    sequential turns, leaving out a turn during which a checkpoint restarted the log."""
    samples = []
    for _ in range(turns):
        frames = await frames_during(db, lambda: _one_turn(ctx, session_id, ids))
        if frames is not None:
            samples.append(frames)
    return sum(samples) / len(samples)


async def _api_pages_per_turn(home: Path, session_id: str, turns: int) -> float:
    """`_pages_per_turn` over the API of a running Node on `home` (one SDK connection,
    `send_and_wait`), for `--api`: `pages_per_turn_1`."""
    from maia.client import open_client, send_and_wait

    samples = []
    async with open_client(home=home, timeout_s=60) as client:
        for _ in range(turns):
            frames = await frames_during(
                home / "maia.db", lambda: send_and_wait(client, session_id, "hi", timeout_s=60)
            )
            if frames is not None:
                samples.append(frames)
    return sum(samples) / len(samples)


async def _raw_writes(path: Path, writers: int, each: int) -> float:
    """Plain one-row transactions from `writers` concurrent tasks (the storage ceiling)."""
    async with open_storage(path, clock=SystemClock()) as store:
        await store.write(lambda c: c.execute("CREATE TABLE raw (n INTEGER)"))

        def insert(conn: sqlite3.Connection) -> None:
            conn.execute("INSERT INTO raw VALUES (1)")

        async def writer() -> None:
            for _ in range(each):
                await store.write(insert)

        started = time.perf_counter()
        async with trio.open_nursery() as nursery:
            for _ in range(writers):
                nursery.start_soon(writer)
        return writers * each / (time.perf_counter() - started)


async def main(quick: bool) -> Report:
    """The in-process measurement (see the module docstring)."""
    report = Report("turns")
    per_session = 40 if quick else 200
    latency_turns = 200 if quick else 1000
    with tempfile.TemporaryDirectory() as folder:
        home = Path(folder)
        root = home / "project"
        root.mkdir()
        ids = Counter()
        async with (
            open_storage(home / "maia.db", clock=SystemClock()) as store,
            open_services(store, clock=SystemClock(), home=home, config=UserConfig()) as ctx,
        ):
            sessions = await _sessions(ctx, root, 51, ids)
            log("warm-up")
            await _throughput(ctx, sessions[:50], 8, ids)
            for _ in range(20):
                await _one_turn(ctx, sessions[50], ids)
            log(f"throughput: 50 Sessions x {per_session} turns")
            cpu_before = time.process_time()
            rate = await _throughput(ctx, sessions[:50], per_session, ids)
            cpu_ms = (time.process_time() - cpu_before) * 1000 / (50 * (per_session // 4) * 4)
            log(f"latency: {latency_turns} sequential turns on one Session")
            latencies = [await _one_turn(ctx, sessions[50], ids) for _ in range(latency_turns)]

            log("pages: WAL frames per turn, one in flight")
            pages = await _pages_per_turn(ctx, home / "maia.db", sessions[50], ids, 200)
        raw = await _raw_round_trips(root, latency_turns)
        raw_writes = await _raw_writes(home / "raw.db", 50, 20 if quick else 100)
    raw_p50 = percentile(raw, 0.5)
    p50 = percentile(latencies, 0.5)
    report.figures.update(
        turns_per_s_50_sessions=rate,
        send_to_completed_p50_ms=p50,
        send_to_completed_p99_ms=percentile(latencies, 0.99),
        raw_worker_rt_p50_ms=raw_p50,
        raw_storage_writes_per_s_c50=raw_writes,
        cpu_ms_per_turn_50=cpu_ms,
    )
    report.ratios["p50_vs_raw_worker_rt"] = raw_p50 / p50
    # A turn is two writes (send; end with the next dispatch): the storage-bound ceiling.
    report.ratios["turns_vs_storage_ceiling"] = rate / (raw_writes / 2)

    report.figures["pages_per_turn_1"] = pages  # WAL frames a turn writes (bench/_pages.py)
    report.notes = (
        "in-process through the handlers (no WebSocket); SQLite synchronous=FULL on a temp "
        "directory; echo workers are real processes; 4 turns in flight per Session"
    )
    return report


def node_cpu_s(pid: int) -> tuple[float, float]:
    """The process's CPU seconds so far, (user, system), all threads, from /proc/PID/stat."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    return int(fields[11]) / tick, int(fields[12]) / tick


def main_thread_cpu_s(pid: int) -> float:
    """The CPU seconds of the Node's main thread (its trio loop) alone: the rest of
    `node_cpu_s` is the storage writer thread (COMMITs) and its reader threads."""
    fields = Path(f"/proc/{pid}/task/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _cpu_ms_per_turn(before: tuple[float, float], after: tuple[float, float],
                     turns: int) -> tuple[float, float]:  # fmt: skip
    """(user + system, system) CPU milliseconds per turn between two `node_cpu_s`."""
    user, system = after[0] - before[0], after[1] - before[1]
    return (user + system) * 1000 / turns, system * 1000 / turns


async def _api_sessions(home: Path, count: int) -> list[str]:
    from maia.client import open_client

    async with open_client(home=home, timeout_s=60) as client:
        project = await client.project.add(root_path=str(home))
        made = [
            (await client.session.create(project_id=project.project.project_id)).session
            for _ in range(count)
        ]
        return [session.session_id for session in made]


async def _api_run(home: Path, sessions: list[str], lanes: int, per_lane: int) -> list[float]:
    """Every send → completed latency (ms) of `lanes` turns in flight per Session, each lane
    `per_lane` turns, 25 lanes per SDK connection (the Node's per-connection bound is 32)."""
    from maia.client import open_client, send_and_wait

    samples: list[float] = []
    work = [session_id for session_id in sessions for _ in range(lanes)]

    async def connection(share: list[str]) -> None:
        async with open_client(home=home, timeout_s=60) as client:

            async def lane(session_id: str) -> None:
                for _ in range(per_lane):
                    began = time.perf_counter()
                    answer = await send_and_wait(client, session_id, "hi", timeout_s=60)
                    if answer.turn.state != "completed":
                        raise RuntimeError(f"a turn ended {answer.turn.state}")
                    samples.append((time.perf_counter() - began) * 1000)

            async with trio.open_nursery() as nursery:
                for session_id in share:
                    nursery.start_soon(lane, session_id)

    connections = -(-len(work) // 25)
    async with trio.open_nursery() as nursery:
        for index in range(connections):
            nursery.start_soon(connection, work[index::connections])
    return samples


def _start_profiler(pid: int, phase: str) -> subprocess.Popen[bytes] | None:
    """With MAIA_BENCH_PYSPY=FILE, `py-spy record` (collapsed stacks, GIL-holding samples)
    of the Node during the measured throughput run, written to FILE; py-spy is not a
    dependency (install it into .venv by hand)."""
    out = os.environ.get("MAIA_BENCH_PYSPY")
    if not out or os.environ.get("MAIA_BENCH_PYSPY_PHASE", "throughput") != phase:
        return None
    spy = Path(sys.executable).with_name("py-spy")
    command = [str(spy), "record", "--pid", str(pid), "--format", "raw", "--output", out]
    command += ["--rate", "250", "--nonblocking"]
    if os.environ.get("MAIA_BENCH_PYSPY_GIL"):
        command.append("--gil")
    if os.environ.get("MAIA_BENCH_PYSPY_IDLE"):
        command.append("--idle")  # waiting threads too: where a thread sits, not just runs
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1.0)  # let it attach before the run starts
    return process


def _stop_profiler(process: subprocess.Popen[bytes] | None) -> None:
    if process is not None:
        process.send_signal(signal.SIGINT)
        process.wait(timeout=60)


async def main_api(quick: bool) -> Report:
    """The `--api` measurement: a real Node process driven by the SDK."""
    from bench._node import start_node

    report = Report("turns")
    per_lane = int(os.environ.get("MAIA_BENCH_PER_LANE", 10 if quick else 50))
    latency_turns = 200 if quick else 1000
    with tempfile.TemporaryDirectory() as folder:
        home = Path(folder) / "home"
        node = start_node(home, "bench/turns.py --api")
        try:
            sessions = await _api_sessions(home, 51)
            log("warm-up (workers spawn)")
            await _api_run(home, sessions[:50], 4, 2)
            await _api_run(home, sessions[50:], 1, 20)
            log(f"throughput: 50 Sessions x 4 in flight x {per_lane} turns")
            profiler = _start_profiler(node.pid, "throughput")
            cpu_before, began = node_cpu_s(node.pid), time.perf_counter()
            main_before = main_thread_cpu_s(node.pid)
            samples = await _api_run(home, sessions[:50], 4, per_lane)
            elapsed = time.perf_counter() - began
            main_ms = (main_thread_cpu_s(node.pid) - main_before) * 1000 / len(samples)
            _stop_profiler(profiler)
            cpu_ms, sys_ms = _cpu_ms_per_turn(cpu_before, node_cpu_s(node.pid), len(samples))
            log(f"latency: {latency_turns} sequential turns on one Session")
            cpu_before = node_cpu_s(node.pid)
            profiler = _start_profiler(node.pid, "latency")
            latencies = await _api_run(home, sessions[50:], 1, latency_turns)
            _stop_profiler(profiler)
            cpu_ms_1, sys_ms_1 = _cpu_ms_per_turn(cpu_before, node_cpu_s(node.pid),
                                                  len(latencies))  # fmt: skip
            log("pages: 100 sequential turns on one Session")
            pages = await _api_pages_per_turn(home, sessions[50], 100)
        finally:
            node.terminate()
            node.wait(timeout=60)
    report.figures.update(
        turns_per_s_50_sessions=len(samples) / elapsed,
        send_to_completed_p50_ms=percentile(latencies, 0.5),
        send_to_completed_p99_ms=percentile(latencies, 0.99),
        node_cpu_ms_per_turn_50=cpu_ms,
        node_cpu_ms_per_turn_1=cpu_ms_1,
        node_sys_cpu_ms_per_turn_50=sys_ms,
        node_main_thread_cpu_ms_per_turn_50=main_ms,
        node_sys_cpu_ms_per_turn_1=sys_ms_1,
        pages_per_turn_1=pages,
    )
    report.notes = (
        "a real Node process over the API (SDK send_and_wait, one request per turn); SQLite "
        "synchronous=FULL; echo workers are real processes; 50 Sessions x 4 in flight over 8 "
        f"connections; Node CPU from /proc/PID/stat; load {os.getloadavg()[0]:.1f}"
    )
    return report


def _callgrind_totals(prefix: Path) -> dict[int, int]:
    """Instructions per thread number in callgrind's first dump (`PREFIX.1-TT` files)."""
    totals: dict[int, int] = {}
    for path in prefix.parent.glob(f"{prefix.name}.1-*"):
        for line in path.read_text().splitlines():
            if line.startswith("totals:"):
                totals[int(path.name.rsplit("-", 1)[1])] = int(line.split()[1])
    return totals


def _under_callgrind(home: Path, out: Path) -> subprocess.Popen[bytes]:
    """The Node on `home` under callgrind, its instrumentation off until turned on."""
    command = ["valgrind", "--tool=callgrind", "--instr-atstart=no", "--separate-threads=yes",
               f"--callgrind-out-file={out}", sys.executable, "-P", "-m", "maia.node",
               "start", "--home", str(home)]  # fmt: skip
    return subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _callgrind_control(pid: int, *steps: list[str]) -> None:
    for step in steps:
        subprocess.run(["callgrind_control", *step, str(pid)], check=True,
                       stdout=subprocess.DEVNULL, timeout=120)  # fmt: skip


async def main_instructions(quick: bool) -> Report:
    """The `--instructions` measurement (see the module docstring)."""
    import shutil

    from maia.core import read_discovery

    report = Report("turns")
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        raise SystemExit("bench/turns.py --instructions: valgrind (callgrind) is not installed")
    turns = int(os.environ.get("MAIA_BENCH_TURNS", 100 if quick else 200))
    with tempfile.TemporaryDirectory() as folder:
        home, out = Path(folder) / "home", Path(folder) / "callgrind.out"
        node = _under_callgrind(home, out)
        try:
            deadline = time.monotonic() + 600  # the Node's start runs ~20x slower here
            while read_discovery(home / "node.json") is None:
                if node.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit("bench/turns.py --instructions: the Node did not start")
                await trio.sleep(0.5)
            session = await _api_sessions(home, 1)
            log("warm-up: 10 turns")
            await _api_run(home, session, 1, 10)
            _callgrind_control(node.pid, ["-z"], ["-i", "on"])
            log(f"counting: {turns} sequential turns on one Session")
            await _api_run(home, session, 1, turns)
            _callgrind_control(node.pid, ["-i", "off"], ["-d"])
        finally:
            node.terminate()
            node.wait(timeout=300)
        totals = _callgrind_totals(out)  # the dump's files, whole once the Node has exited
    report.figures.update(
        node_instructions_per_turn_1=sum(totals.values()) / turns,
        node_main_thread_instructions_per_turn_1=totals.get(1, 0) / turns,
    )
    report.notes = (
        "a real Node process under callgrind (workers untraced), one Session one turn at a "
        f"time over the API (SDK send_and_wait); load {os.getloadavg()[0]:.1f}"
    )
    return report


if __name__ == "__main__":
    modes = {"--api": main_api, "--instructions": main_instructions}
    chosen = [modes[a] for a in sys.argv[1:] if a in modes]
    args = parse_args(__doc__ or "turns", [a for a in sys.argv[1:] if a not in modes])
    trio.run(chosen[0] if chosen else main, args.quick).emit(args.json)
