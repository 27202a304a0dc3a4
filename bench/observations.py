"""Records delivered by the observation stream while 50 Sessions run echo turns.

A real Node runs in its own process (`python -m maia.node start`, SQLite synchronous=FULL,
real echo workers). This process drives 50 Sessions (each: turn.send, then turn.wait, again)
and follows `/api/v1/observations` with 1, then 50 SDK subscribers (query: everything, with
content). For each run it reports the records delivered per second, summed over the
subscribers and per subscriber, next to what the Node produced (journal events + live item
records) in the same window, so you can see whether delivery keeps up.

Raw primitive, same run: a bare trio-websocket server pushing pre-encoded 64-record frames
(records of the same size) to 1 and 50 trio-websocket clients: the transport's ceiling.
"""

from __future__ import annotations

import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import orjson
import psutil
import trio
from trio_websocket import ConnectionClosed, WebSocketRequest, open_websocket, serve_websocket

from bench._report import Report, log, parse_args
from maia.client import MaiaClient, observe_events, open_client, read_discovery

SESSIONS = 50
TURN_TEXT = "observe me " * 30  # ~330 characters: a handful of 64-character deltas


def start_node(home: Path) -> subprocess.Popen[bytes]:
    home.mkdir(mode=0o700)
    (home / "config.jsonc").write_text('{"executors": {"echo": {"kind": "echo"}}}')
    process = subprocess.Popen(
        [sys.executable, "-m", "maia.node", "start", "--home", str(home)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        record = read_discovery(home / "node.json")
        if record is not None and record.pid == process.pid:
            return process
        time.sleep(0.05)
    process.kill()
    raise RuntimeError("the Node did not start")


async def make_sessions(client: MaiaClient, root: Path) -> list[str]:
    await trio.Path(root).mkdir(exist_ok=True)
    project = await client.call("project.add", command_id="bench-p", root_path=str(root))
    out = []
    for n in range(SESSIONS):
        created = await client.call("session.create", command_id=f"bench-s{n}",
                                    project_id=project.project.project_id,
                                    executor="user:echo")  # fmt: skip
        out.append(created.session.session_id)

    async def warm(session_id: str) -> None:  # start every worker before measuring
        sent = await client.call("turn.send", command_id=f"warm-{session_id}",
                                 session_id=session_id, text="warm up")  # fmt: skip
        while not (await client.call("turn.wait", turn_id=sent.turn.turn_id,
                                     states=("completed", "failed"))).satisfied:  # fmt: skip
            pass

    async with trio.open_nursery() as nursery:
        for session_id in out[:25]:
            nursery.start_soon(warm, session_id)
    async with trio.open_nursery() as nursery:
        for session_id in out[25:]:
            nursery.start_soon(warm, session_id)
    return out


class Run:
    def __init__(self) -> None:
        self.delivered = 0
        self.turns = 0
        self.counting = False


async def drive(client: MaiaClient, session_id: str, run: Run, stop: trio.Event,
                tag: str) -> None:  # fmt: skip
    n = 0
    while not stop.is_set():
        n += 1
        sent = await client.call("turn.send", command_id=f"{tag}-{session_id}-{n}",
                                 session_id=session_id, text=TURN_TEXT)  # fmt: skip
        while True:
            done = await client.call("turn.wait", turn_id=sent.turn.turn_id,
                                     states=("completed", "failed"))  # fmt: skip
            if done.satisfied:
                break
        if run.counting:
            run.turns += 1


async def follow(client: MaiaClient, run: Run, ready: trio.Event | None) -> None:
    async with observe_events(client, {"limit": 0, "includeContent": True}) as feed:
        async for frame in feed:
            if ready is not None and frame.type == "snapshot":
                ready.set()
                ready = None
            if run.counting:
                run.delivered += len(frame.records)


def _cpu(process: psutil.Process) -> float:
    times = process.cpu_times()
    return float(times.user + times.system)


async def measure_node(url: str, token: str, root: Path, subscribers: int, seconds: float,
                       tag: str, sessions: list[str],
                       node_pid: int) -> dict[str, float]:  # fmt: skip
    run = Run()
    async with trio.open_nursery() as nursery:
        clients = []
        for _ in range(4):
            clients.append(await nursery.start(_client_task, url, token))
        readies = []
        for index in range(subscribers):
            ready = trio.Event()
            readies.append(ready)
            nursery.start_soon(follow, clients[index % 4], run, ready)
        for ready in readies:
            await ready.wait()
        stop = trio.Event()
        for index, session_id in enumerate(sessions):
            nursery.start_soon(drive, clients[index % 4], session_id, run, stop, tag)
        await trio.sleep(1.0)  # warm-up: the drivers reach their pace
        node, me = psutil.Process(node_pid), psutil.Process()
        node_cpu, my_cpu = _cpu(node), _cpu(me)
        psutil.cpu_percent()  # starts the machine-wide measurement
        run.counting = True
        started = time.perf_counter()
        await trio.sleep(seconds)
        run.counting = False
        elapsed = time.perf_counter() - started
        node_cpu, my_cpu = _cpu(node) - node_cpu, _cpu(me) - my_cpu
        busy = psutil.cpu_percent() / 100
        stop.set()
        nursery.cancel_scope.cancel()
    return {
        "records_per_s": run.delivered / elapsed,
        "per_subscriber": run.delivered / elapsed / subscribers,
        "turns_per_s": run.turns / elapsed,
        "node_cpu": node_cpu / elapsed,
        "client_cpu": my_cpu / elapsed,
        "busy": busy,
    }


async def _client_task(url: str, token: str, *, task_status: Any) -> None:
    async with open_client(url, token=token) as client:
        task_status.started(client)
        await trio.sleep_forever()


async def measure_raw(subscribers: int, seconds: float, record: bytes) -> float:
    """Records/s a bare trio-websocket server pushes to `subscribers` clients."""
    frame = (b'{"records":[' + b",".join([record] * 64) + b"]}").decode()
    received = [0]
    counting = [False]

    async def handler(request: WebSocketRequest) -> None:
        ws = await request.accept()
        try:
            while True:
                await ws.send_message(frame)
        except ConnectionClosed:
            return

    async def client(port: int) -> None:
        async with open_websocket("127.0.0.1", port, "/", use_ssl=False) as ws:
            while True:
                await ws.get_message()
                if counting[0]:
                    received[0] += 64

    async with trio.open_nursery() as nursery:
        server = await nursery.start(serve_websocket, handler, "127.0.0.1", 0, None)
        for _ in range(subscribers):
            nursery.start_soon(client, server.port)
        await trio.sleep(0.5)
        counting[0] = True
        started = time.perf_counter()
        await trio.sleep(seconds)
        counting[0] = False
        elapsed = time.perf_counter() - started
        nursery.cancel_scope.cancel()
    return received[0] / elapsed


async def main_async(quick: bool) -> Report:
    seconds = 4.0 if quick else 12.0
    rounds = 1 if quick else 3
    report = Report("observations")
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        node = start_node(home)
        try:
            record = read_discovery(home / "node.json")
            assert record is not None
            token = (home / "node.token").read_text().strip()
            async with open_client(record.url, token=token) as client:
                sessions = await make_sessions(client, Path(tmp) / "project")
            results: dict[int, list[dict[str, float]]] = {1: [], 50: []}
            for round_ in range(rounds):
                for subscribers in (1, 50):
                    log(f"round {round_ + 1}: {subscribers} subscriber(s), {seconds:.0f} s")
                    got = await measure_node(record.url, token, Path(tmp), subscribers, seconds,
                                             f"r{round_}k{subscribers}", sessions,
                                             node.pid)  # fmt: skip
                    results[subscribers].append(got)
        finally:
            node.send_signal(signal.SIGTERM)
            try:
                node.wait(timeout=90)
            except subprocess.TimeoutExpired:
                node.kill()
    sample = orjson.dumps({"schemaVersion": "maia.observation.v1", "payload": "x" * 400,
                           **{f"field{n}": None for n in range(28)}})  # fmt: skip
    raw = {k: statistics.median([await measure_raw(k, seconds / 2, sample) for _ in range(rounds)])
           for k in (1, 50)}  # fmt: skip

    def med(k: int, key: str) -> float:
        return statistics.median(r[key] for r in results[k])

    report.figures = {
        "records_per_s_1_subscriber": med(1, "records_per_s"),
        "records_per_s_50_subscribers": med(50, "records_per_s"),
        "records_per_s_per_subscriber_50": med(50, "per_subscriber"),
        "turns_per_s_with_1_subscriber": med(1, "turns_per_s"),
        "turns_per_s_with_50_subscribers": med(50, "turns_per_s"),
        "node_cpu_share_1_subscriber": med(1, "node_cpu"),
        "node_cpu_share_50_subscribers": med(50, "node_cpu"),
        "client_cpu_share_50_subscribers": med(50, "client_cpu"),
        "machine_busy_1_subscriber": med(1, "busy"),
        "machine_busy_50_subscribers": med(50, "busy"),
        "raw_push_records_per_s_1": raw[1],
        "raw_push_records_per_s_50": raw[50],
    }
    report.ratios = {
        "fanout_per_subscriber_50_vs_1": med(50, "per_subscriber") / med(1, "records_per_s"),
        "vs_raw_push_50": med(50, "records_per_s") / raw[50],
    }
    report.notes = (
        f"Node in its own process, {SESSIONS} Sessions running echo turns back to back; "
        f"{seconds:.0f} s windows, median of {rounds}; records = journal events + live "
        "item records. Delivery is bounded by what the turns produce, not by the socket: "
        "compare per-subscriber records/s with 50 and with 1 subscriber. Raw: bare "
        "trio-websocket push of 64-record frames (the transport ceiling). cpu_share: CPU "
        "seconds per second of the Node process and of this (client) process; the echo "
        "workers share the same cores."
    )
    return report


def main() -> None:
    args = parse_args(__doc__ or "")
    report = trio.run(main_async, args.quick)
    report.emit(args.json)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
