"""The Node API's round trips beside a raw trio-websocket echo, measured in the same run.

A real Node process (`python -m maia.node start` on a temporary home) and a raw
trio-websocket echo server process (same library, same loopback, no Maia) each serve
clients in this process. The clients are the same in both cases (trio-websocket, one
request in flight per connection): `node.status` against the Node (envelope parsing,
schema check, a storage read through the reader pool, encoding), one short text message
against the echo. 1 and 16 connections; Node and echo rounds alternate (a load swing on a
shared machine hits both), figures are medians over rounds after a warm-up, and each
ratio is the median of the per-round ratios. The echo's own p50/p99 are reported beside
the Node's, since on a loaded machine the tail belongs to the machine.
The SDK (anyio + wsproto) is measured too, as `sdk_rt_per_s_c1`. Each server process's
CPU time per round trip (`cpu_us_per_rt_*`, `echo_cpu_us_per_rt_*`, ratio `cpu_vs_echo_*`:
the echo's over the Node's) says what the Node itself costs, with less of the load's noise.

`node.status` answers from a shared storage read and a shared check of the configuration
files, each at most 250 ms old (one in flight, shared by the callers that arrive meanwhile),
so most calls do no I/O; its ratio is the API's with a large answer. The same rounds also
send `node.hello` on a greeted connection, which the Node refuses `invalid_request` at once
(no I/O; a second hello was answered ok before registry 0.14.0): the `hello_*` figures and
`vs_echo_*_hello` ratios are the frame path alone (decode, dispatch, an error's encoding,
the WebSocket layer). `p99_vs_echo_c1` is the echo's p99 over the Node's (goal 6:
at least 0.5, a Node p99 within twice the echo's).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import attrs
import psutil
import trio
from trio_websocket import open_websocket_url

from bench._node import start_node
from bench._report import Report, log, median_of_rounds, parse_args, percentile
from maia.client import open_client, read_discovery, read_token

ECHO_SERVER = """
import sys, trio
from trio_websocket import serve_websocket
async def echo(request):
    ws = await request.accept()
    try:
        while True:
            await ws.send_message(await ws.get_message())
    except Exception:
        pass
async def main():
    async with trio.open_nursery() as nursery:
        server = await nursery.start(serve_websocket, echo, "127.0.0.1", 0, None)
        print(server.port, flush=True)
trio.run(main)
"""

STATUS = '{"id": 1, "method": "node.status", "params": {}}'
HELLO = '{"id": 0, "method": "node.hello", "params": {"protocol": "maia.protocol/v1alpha1"}}'
HELLO_AGAIN = HELLO.replace('"id": 0', '"id": 1')


async def _client_loop(
    url: str, headers: list[tuple[bytes, bytes]], frame: str, count: int, hello: bool
) -> list[float]:
    samples: list[float] = []
    async with open_websocket_url(url, extra_headers=headers) as ws:
        if hello:
            await ws.send_message(HELLO)
            await ws.get_message()
        for _ in range(count):
            began = time.perf_counter()
            await ws.send_message(frame)
            await ws.get_message()
            samples.append(time.perf_counter() - began)
    return samples


def measure(
    url: str, headers: list[tuple[bytes, bytes]], frame: str, conns: int, count: int, hello: bool
) -> tuple[float, list[float]]:
    """(round trips per second over all connections, every latency sample in seconds)."""
    samples: list[float] = []

    async def main() -> float:
        async def one() -> None:
            samples.extend(await _client_loop(url, headers, frame, count, hello))

        began = time.perf_counter()
        async with trio.open_nursery() as nursery:
            for _ in range(conns):
                nursery.start_soon(one)
        return time.perf_counter() - began

    elapsed = trio.run(main)
    return conns * count / elapsed, samples


def measure_sdk(home: Path, count: int) -> float:
    async def main() -> float:
        async with open_client(home=home) as client:
            began = time.perf_counter()
            for _ in range(count):
                await client.request("node.status")
            return count / (time.perf_counter() - began)

    return trio.run(main)


def _cpu_s(process: psutil.Process) -> float:
    times = process.cpu_times()
    return float(times.user + times.system)


@attrs.frozen
class Servers:
    """Where the clients go, and the two server processes whose CPU time is read."""

    url: str
    auth: list[tuple[bytes, bytes]]
    echo_url: str
    node: psutil.Process
    echo: psutil.Process


def _compare(
    report: Report, servers: Servers, frame: str, prefix: str, conns: int, per_conn: int,
    rounds: int,
) -> None:  # fmt: skip
    """Node and echo rounds of `frame`, alternating, so a load swing on a shared machine hits
    both alike; the ratio is the median of the per-round ratios. Each server's CPU time per
    round trip is read too: unlike throughput, it hardly moves with the machine's load."""
    node_samples: list[float] = []
    echo_samples: list[float] = []
    node_rates: list[float] = []
    echo_rates: list[float] = []
    node_cpu: list[float] = []
    echo_cpu: list[float] = []
    for round_number in range(rounds + 1):  # round 0 is the warm-up
        began = _cpu_s(servers.node)
        rate, samples = measure(servers.url, servers.auth, frame, conns, per_conn, True)
        used = _cpu_s(servers.node) - began
        began = _cpu_s(servers.echo)
        echo_rate, echoed = measure(servers.echo_url, [], frame, conns, per_conn, False)
        echo_used = _cpu_s(servers.echo) - began
        if round_number:
            node_rates.append(rate)
            echo_rates.append(echo_rate)
            node_samples.extend(samples)
            echo_samples.extend(echoed)
            node_cpu.append(used * 1e6 / (conns * per_conn))
            echo_cpu.append(echo_used * 1e6 / (conns * per_conn))
    figures, ratios = report.figures, report.ratios
    figures[f"{prefix}cpu_us_per_rt_c{conns}"] = round(statistics.median(node_cpu), 1)
    figures[f"{prefix}echo_cpu_us_per_rt_c{conns}"] = round(statistics.median(echo_cpu), 1)
    suffix = "_hello" if prefix else ""
    ratios[f"cpu_vs_echo_c{conns}{suffix}"] = round(
        statistics.median(figures[f"{prefix}echo_cpu_us_per_rt_c{conns}"] / max(n, 1e-9)
                          for n in node_cpu), 3
    )  # fmt: skip
    figures[f"{prefix}rt_per_s_c{conns}"] = round(statistics.median(node_rates), 1)
    figures[f"{prefix}echo_rt_per_s_c{conns}"] = round(statistics.median(echo_rates), 1)
    ratios[f"vs_echo_c{conns}{suffix}"] = round(
        statistics.median(n / e for n, e in zip(node_rates, echo_rates, strict=True)), 3
    )
    if conns == 1:
        figures[f"{prefix}p50_ms_c1"] = round(percentile(node_samples, 0.50) * 1000, 3)
        figures[f"{prefix}p99_ms_c1"] = round(percentile(node_samples, 0.99) * 1000, 3)
        # The echo's own latencies: on a loaded machine p99 is the machine's.
        figures[f"{prefix}echo_p50_ms_c1"] = round(percentile(echo_samples, 0.50) * 1000, 3)
        figures[f"{prefix}echo_p99_ms_c1"] = round(percentile(echo_samples, 0.99) * 1000, 3)
        ratios[f"p99_vs_echo_c1{suffix}"] = round(
            figures[f"{prefix}echo_p99_ms_c1"] / figures[f"{prefix}p99_ms_c1"], 3
        )


def main() -> None:
    args = parse_args(__doc__ or "api")
    rounds, count = (3, 200) if args.quick else (5, 2000)
    report = Report("api")
    with tempfile.TemporaryDirectory() as folder:
        home = Path(folder) / "home"
        node = start_node(home, "bench/api.py")
        echo = subprocess.Popen(
            [sys.executable, "-c", ECHO_SERVER], stdout=subprocess.PIPE, text=True
        )
        try:
            assert echo.stdout is not None
            echo_url = f"ws://127.0.0.1:{echo.stdout.readline().strip()}/"
            record = read_discovery(home / "node.json")
            assert record is not None
            auth = [(b"Authorization", f"Bearer {read_token(Path(record.token_path))}".encode())]
            servers = Servers(
                record.url, auth, echo_url, psutil.Process(node.pid), psutil.Process(echo.pid)
            )
            for conns in (1, 16):
                per_conn = count if conns == 1 else max(50, count // 8)
                log(f"api: {conns} connection(s), {per_conn} round trips each, {rounds} rounds")
                for prefix, frame in (("", STATUS), ("hello_", HELLO_AGAIN)):
                    _compare(report, servers, frame, prefix, conns, per_conn, rounds)
            report.figures["sdk_rt_per_s_c1"] = round(
                median_of_rounds(rounds, lambda: measure_sdk(home, count)), 1
            )
        finally:
            echo.kill()
            echo.wait()
            if echo.stdout is not None:
                echo.stdout.close()
            node.terminate()
            node.wait(timeout=30)
    report.notes = (
        "node.status over the API (shared storage read and files check, <=250 ms old) vs a raw "
        "trio-websocket echo of the same frame; hello_*: node.hello on a greeted connection, "
        "refused at once (the frame path alone); server processes separate from the clients; "
        f"p50/p99 of every c1 sample; load average at the end {os.getloadavg()[0]:.1f} "
        f"on {os.cpu_count()} CPUs"
    )
    report.emit(args.json)


if __name__ == "__main__":
    main()
