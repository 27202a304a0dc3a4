"""The Node's resident memory over many echo turns and then at rest (issue 18's must-show).

Starts a real Node process on a fresh home (loopback only), drives `--turns` echo turns
through the SDK (`--sessions` Sessions, `--lanes` turns in flight per Session), samples the
Node's RSS every `--sample-every` turns, then waits `--idle-s` seconds and samples again.
Prints one JSON object: the samples, and the last-quarter slope (KiB per 1,000 turns), which
is ~0 when memory plateaus. Bounded: a fixed count of turns, each wait with a timeout.

With `--idle-sessions N` it first creates N Sessions that never run a turn (so no worker
process) and reports the RSS of the Node idle at start (`idleRssMiB`), once they exist
(`idleSessionsRssMiB`), per Session (`bytesPerIdleSession`) and the Node's CPU per creation
(`createCpuMsPerSession`, utime + stime of all its threads).

Beside it, in the same run, the primitive: a bare interpreter that imported what any trio
WebSocket server on SQLite imports (trio, trio-websocket, sqlite3, attrs, orjson) and
idles (`bareRssMiB`); `idleVsBare` is the Node's idle RSS over it. `sqliteCacheBoundMiB` is
the most the Node's SQLite page caches may hold (the writer's and the two readers').
With `--json` it prints the benchmarks' common shape (`bench`, `figures`, `ratios`, `notes`).

    .venv/bin/python bench/rss.py --turns 16000 --idle-s 70
    .venv/bin/python bench/rss.py --turns 0 --idle-sessions 10000 --idle-s 5 --json
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import psutil
import trio

import storage
from maia.client import MaiaClient, open_client
from maia.core import read_discovery

_BARE = (
    "import sys, time, sqlite3, attrs, orjson, trio, trio_websocket\n"
    "print('ready', flush=True)\n"
    "sys.stdin.read()\n"
)


def _cpu_s(process: psutil.Process) -> float:
    times = process.cpu_times()
    return float(times.user + times.system)


def _bare_rss_mib() -> float:
    """The RSS of an idle interpreter that imported a trio WebSocket server's stack."""
    bare = subprocess.Popen([sys.executable, "-P", "-c", _BARE], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert bare.stdout is not None
        if bare.stdout.readline().strip() != "ready":
            raise SystemExit("the bare interpreter did not start")
        time.sleep(1.0)
        return _rss_mib(psutil.Process(bare.pid))
    finally:
        assert bare.stdin is not None
        bare.stdin.close()
        bare.wait(timeout=30)


def _rss_mib(process: psutil.Process) -> float:
    return round(process.memory_info().rss / 2**20, 1)


async def _idle_sessions(client: MaiaClient, project_id: str, count: int) -> None:
    """Create `count` Sessions, 8 at a time, none of which ever runs a turn."""
    made = 0

    async def lane() -> None:
        nonlocal made
        while made < count:
            made += 1
            await client.session.create(project_id=project_id)

    async with trio.open_nursery() as nursery:
        for _ in range(8):
            nursery.start_soon(lane)


async def _drive(home: Path, node: psutil.Process, args: argparse.Namespace) -> dict[str, Any]:
    await trio.sleep(1.0)  # let the Node settle after its start
    idle_rss = node.memory_info().rss
    samples: list[dict[str, float]] = [{"turns": 0, "rssMiB": _rss_mib(node)}]
    extra: dict[str, Any] = {"idleRssMiB": round(idle_rss / 2**20, 1)}
    done = 0
    async with open_client(home=home, timeout_s=60) as client:
        project = await client.project.add(root_path=str(home))
        if args.idle_sessions:
            cpu = _cpu_s(node)
            await _idle_sessions(client, project.project.project_id, args.idle_sessions)
            cpu = _cpu_s(node) - cpu
            await trio.sleep(1.0)
            rss = node.memory_info().rss
            extra["idleSessions"] = args.idle_sessions
            extra["idleSessionsRssMiB"] = round(rss / 2**20, 1)
            extra["bytesPerIdleSession"] = round((rss - idle_rss) / args.idle_sessions)
            extra["createCpuMsPerSession"] = round(cpu * 1000 / args.idle_sessions, 3)
        sessions = [
            (await client.session.create(project_id=project.project.project_id)).session
            for _ in range(args.sessions if args.turns else 0)
        ]
        samples.append({"turns": 0, "rssMiB": _rss_mib(node)})

        async def lane(session_id: str, count: int) -> None:
            nonlocal done
            for _ in range(count):
                sent = await client.turn.send(session_id=session_id, text="hello")
                await client.turn.wait(turn_id=sent.turn.turn_id, states=["completed"])
                done += 1
                if done % args.sample_every == 0:
                    samples.append({"turns": done, "rssMiB": _rss_mib(node)})

        per_lane = args.turns // (args.sessions * args.lanes)
        async with trio.open_nursery() as nursery:
            for session in sessions:
                for _ in range(args.lanes):
                    nursery.start_soon(lane, session.session_id, per_lane)
    started_idle = time.monotonic()
    await trio.sleep(args.idle_s)
    idle = {"idleS": round(time.monotonic() - started_idle), "rssMiB": _rss_mib(node)}
    tail = samples[-max(2, len(samples) // 4) :]
    slope = (
        (tail[-1]["rssMiB"] - tail[0]["rssMiB"])
        * 1024
        / max(1, (tail[-1]["turns"] - tail[0]["turns"]) / 1000)
    )
    # SQLite's page cache follows the database up to its bound (1 MiB for the writer by
    # default, MAIA_STORAGE_CACHE_MIB): the file sizes say how much it could hold.
    sizes = {name: round((home / name).stat().st_size / 2**20, 1)
             for name in ("maia.db", "maia.db-wal") if (home / name).exists()}  # fmt: skip
    return {"turns": done, "samples": samples, "afterIdle": idle, "fileMiB": sizes,
            "lastQuarterKiBPer1000Turns": round(slope, 1), **extra}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=16_000)
    parser.add_argument("--sessions", type=int, default=8)
    parser.add_argument("--lanes", type=int, default=1)
    parser.add_argument("--sample-every", type=int, default=1000)
    parser.add_argument("--idle-s", type=float, default=70.0)
    parser.add_argument("--idle-sessions", type=int, default=0)
    parser.add_argument("--json", action="store_true", help="the benchmarks' common shape")
    args = parser.parse_args()
    bare = _bare_rss_mib()
    with tempfile.TemporaryDirectory() as scratch:
        home = Path(scratch) / "home"
        process = subprocess.Popen(
            [sys.executable, "-P", "-m", "maia.node", "start", "--home", str(home)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                record = read_discovery(home / "node.json")
                if record is not None and record.pid == process.pid:
                    break
                time.sleep(0.05)
            else:
                raise SystemExit("the Node did not start within 60 s")
            result = trio.run(_drive, home, psutil.Process(process.pid), args)
        finally:
            process.terminate()
            process.wait(timeout=60)
    result["bareRssMiB"] = bare
    result["idleVsBare"] = round(result["idleRssMiB"] / bare, 2)
    cache_mib = storage.cache_mib_setting() + 2 * storage.READER_CACHE_KIB / 1024
    result["sqliteCacheBoundMiB"] = cache_mib
    if not args.json:
        print(json.dumps(result))
        return
    figures = {k: v for k, v in result.items() if isinstance(v, int | float)}
    figures["afterIdleRssMiB"] = result["afterIdle"]["rssMiB"]
    print(json.dumps({"bench": "rss", "figures": figures,
                      "ratios": {"idle_vs_bare": result["idleVsBare"]},
                      "notes": "RSS of a real Node process (MiB = 2**20 bytes); bare: an idle"
                               " interpreter with trio, trio-websocket, sqlite3, attrs, orjson"
                               f" imported; load {os.getloadavg()[0]:.2f}"}))  # fmt: skip


if __name__ == "__main__":
    main()
