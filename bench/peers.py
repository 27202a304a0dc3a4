"""Durable queued work through the real API beside huey (SqliteHuey), in the same run.

Maia: a real Node process on a temporary home, driven through the SDK (one WebSocket,
`send_and_wait`: one `turn.send` that waits for the turn's end, as `bench/turns.py --api`
drives it; the answer must be `completed` with the prompt's text), echo executor, one
worker process per Session, every commit fsynced (WAL, synchronous=FULL), a receipt and
journal events per transition. huey: SqliteHuey 3.x with `fsync=True` (synchronous=FULL) in
WAL mode, a thread-worker consumer process (`-d 0.001 -m 0.001`: 1 ms polls) and producer
threads in another process that enqueue an echo task and poll its result every 1 ms. Both
store the request and its result durably before the producer sees it; huey keeps no
receipts, no idempotency keys, no journal and no per-job process, and loses what a worker
had taken when the consumer is killed.

What differs at one in flight (huey read from its source, Maia traced with strace): a huey
job is four fsynced commits (enqueue, dequeue, result, the producer's pop of it), in Python
code paths of a few statements, with up to 1 ms of polling on each side; a Maia turn is two fsynced
commits (the turn with its receipt and dispatch; its events and end), pushed to the waiter
(no polling), but each commit carries the Session's rows, ~11 journal events and a
receipt, and the prompt crosses a pipe to the Session's own worker process. The gap is the
Node's Python CPU on that serial path (~2.5 ms a turn), not the fsyncs (~0.4 ms each here)
nor the thread hand-offs (~30 us each, four a turn).

huey is installed into its own scratch virtual environment under the system temporary
folder (`pip install huey==HUEY_VERSION`) on first use; if that fails the huey figures are
reported as skipped in `notes`, never made up.

Measured: turns (jobs) per second at 50 Sessions × 4 in flight (huey: 200 producer threads),
and the p50 of send → completed with one in flight. Rounds alternate Maia and huey after a
warm-up; each ratio is the median of the per-round ratios.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import trio

from bench._node import start_node
from bench._report import Report, log, parse_args, percentile
from maia.client import MaiaClient, open_client, send_and_wait

HUEY_VERSION = "3.5.4"
HUEY_VENV = Path(tempfile.gettempdir()) / f"maia-bench-huey-{HUEY_VERSION}"
SESSIONS, LANES = 50, 4
HUEY_WORKERS = 8
LANES_PER_CONNECTION = 25  # the Node answers at most 32 requests in flight per connection

HUEY_APP = """
import os
from huey import SqliteHuey
huey = SqliteHuey("bench", filename=os.environ["PEERS_HUEY_DB"], fsync=True, journal_mode="wal")
@huey.task()
def echo(text):
    return text
"""

HUEY_DRIVER = """
import json, sys, threading, time
from peers_app import echo
lanes, per_lane = int(sys.argv[1]), int(sys.argv[2])
samples, failures = [], []
def lane():
    try:
        for _ in range(per_lane):
            began = time.perf_counter()
            result = echo("hello")
            if result.get(blocking=True, timeout=60, backoff=1.0, max_delay=0.001) != "hello":
                raise RuntimeError("wrong answer")
            samples.append(time.perf_counter() - began)
    except BaseException as error:
        failures.append(repr(error))
threads = [threading.Thread(target=lane) for _ in range(lanes)]
began = time.perf_counter()
for t in threads: t.start()
for t in threads: t.join(120)
elapsed = time.perf_counter() - began
print(json.dumps({"rate": len(samples) / elapsed, "samples": samples, "failures": failures}))
"""


def _huey_python() -> Path | None:
    """The scratch venv's python with huey installed, or None (why is logged)."""
    python = HUEY_VENV / "bin" / "python"
    check = [str(python), "-c", f"import huey; assert huey.__version__ == '{HUEY_VERSION}'"]
    if python.exists() and subprocess.run(check, capture_output=True).returncode == 0:
        return python
    log(f"peers: installing huey {HUEY_VERSION} into {HUEY_VENV}")
    try:
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(HUEY_VENV)], check=True,
                       capture_output=True, timeout=120)  # fmt: skip
        subprocess.run([str(python), "-m", "pip", "install", "-q", f"huey=={HUEY_VERSION}"],
                       check=True, capture_output=True, timeout=300)  # fmt: skip
    except (OSError, subprocess.SubprocessError) as error:
        log(f"peers: could not install huey: {error}")
        return None
    return python if subprocess.run(check, capture_output=True).returncode == 0 else None


class Huey:
    """A SqliteHuey consumer process and the producer runs against it."""

    def __init__(self, python: Path, folder: Path) -> None:
        self._python = python
        self._folder = folder
        (folder / "peers_app.py").write_text(HUEY_APP)
        (folder / "driver.py").write_text(HUEY_DRIVER)
        self._env = {**os.environ, "PEERS_HUEY_DB": str(folder / "huey.db"),
                     "PYTHONPATH": str(folder)}  # fmt: skip
        self._consumer = subprocess.Popen(
            [str(python), "-m", "huey.bin.huey_consumer", "peers_app.huey", "-w",
             str(HUEY_WORKERS), "-k", "thread", "-d", "0.001", "-m", "0.001", "-b", "1.0",
             "-n", "-q"],
            cwd=folder, env=self._env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip

    def run(self, lanes: int, per_lane: int) -> tuple[float, list[float]]:
        done = subprocess.run(
            [str(self._python), str(self._folder / "driver.py"), str(lanes), str(per_lane)],
            cwd=self._folder, env=self._env, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        if done.returncode != 0:
            raise RuntimeError(f"the huey driver failed: {done.stderr[-500:]}")
        result = json.loads(done.stdout)
        if result["failures"]:
            raise RuntimeError(f"huey jobs failed: {result['failures'][:3]}")
        return float(result["rate"]), [float(s) for s in result["samples"]]

    def close(self) -> None:
        self._consumer.terminate()
        try:
            self._consumer.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self._consumer.kill()
            self._consumer.wait()


async def _send_and_wait(client: MaiaClient, session_id: str) -> float:
    """One turn as one request, `turn.send` waiting for its end; checked like huey's job."""
    began = time.perf_counter()
    answer = await send_and_wait(client, session_id, "hello", timeout_s=60)
    if answer.turn.state != "completed" or answer.turn.output_text != "hello":
        raise RuntimeError(f"a turn ended {answer.turn.state}: {answer.turn.output_text!r}")
    return time.perf_counter() - began


async def _maia_setup(home: Path, sessions: int) -> list[str]:
    async with open_client(home=home, timeout_s=60) as client:
        project = await client.project.add(root_path=str(home))
        made = [
            (await client.session.create(project_id=project.project.project_id)).session
            for _ in range(sessions)
        ]
        return [session.session_id for session in made]


def maia_run(
    home: Path, sessions: list[str], lanes: int, per_lane: int
) -> tuple[float, list[float]]:
    """(turns per second, every send → completed latency) with `lanes` in flight per Session,
    over as many SDK connections as the Node's per-connection bound asks for."""
    samples: list[float] = []
    work = [session_id for session_id in sessions for _ in range(lanes)]
    connections = -(-len(work) // LANES_PER_CONNECTION)

    async def main() -> float:
        async def connection(share: list[str]) -> None:
            async with open_client(home=home, timeout_s=60) as client:

                async def lane(session_id: str) -> None:
                    for _ in range(per_lane):
                        samples.append(await _send_and_wait(client, session_id))

                async with trio.open_nursery() as nursery:
                    for session_id in share:
                        nursery.start_soon(lane, session_id)

        began = time.perf_counter()
        async with trio.open_nursery() as nursery:
            for index in range(connections):
                nursery.start_soon(connection, work[index::connections])
        return len(samples) / (time.perf_counter() - began)

    return trio.run(main), samples


def main() -> None:
    args = parse_args(__doc__ or "peers")
    rounds, per_lane, sequential = (1, 3, 60) if args.quick else (5, 10, 300)
    report = Report("peers")
    python = _huey_python()
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        home = folder / "home"
        node = start_node(home, "bench/peers.py")
        (folder / "huey").mkdir()
        huey = Huey(python, folder / "huey") if python is not None else None
        try:
            sessions = trio.run(_maia_setup, home, SESSIONS)
            rows: dict[str, list[float]] = {k: [] for k in ("maia_t", "huey_t", "maia_p", "huey_p")}
            for round_number in range(rounds + 1):  # round 0 warms both up (workers spawn)
                log(f"peers: round {round_number} of {rounds} (0 is the warm-up)")
                rate, _ = maia_run(home, sessions, LANES, per_lane)
                _, lone = maia_run(home, sessions[:1], 1, sequential)
                if round_number:
                    rows["maia_t"].append(rate)
                    rows["maia_p"].append(percentile(lone, 0.5) * 1000)
                if huey is not None:
                    rate, _ = huey.run(SESSIONS * LANES, per_lane)
                    _, lone = huey.run(1, sequential)
                    if round_number:
                        rows["huey_t"].append(rate)
                        rows["huey_p"].append(percentile(lone, 0.5) * 1000)
        finally:
            if huey is not None:
                huey.close()
            node.terminate()
            node.wait(timeout=60)
    report.figures["maia_turns_per_s_t50"] = round(statistics.median(rows["maia_t"]), 1)
    report.figures["maia_p50_ms_1"] = round(statistics.median(rows["maia_p"]), 3)
    load = os.getloadavg()[0]
    if huey is None:
        report.notes = f"huey skipped: it could not be installed into {HUEY_VENV}; load {load:.1f}"
    else:
        report.figures["huey_turns_per_s_t50"] = round(statistics.median(rows["huey_t"]), 1)
        report.figures["huey_p50_ms_1"] = round(statistics.median(rows["huey_p"]), 3)
        pairs = zip(rows["maia_t"], rows["huey_t"], strict=True)
        report.ratios["vs_huey_t50"] = round(statistics.median(m / h for m, h in pairs), 3)
        pairs = zip(rows["maia_p"], rows["huey_p"], strict=True)
        report.ratios["p50_vs_huey_1"] = round(statistics.median(h / m for m, h in pairs), 3)
        report.notes = (
            f"Maia through the SDK (send_and_wait: one waiting turn.send), {SESSIONS} Sessions "
            f"x {LANES} in flight, echo executor, synchronous=FULL; huey {HUEY_VERSION} "
            f"SqliteHuey fsync=True WAL, {HUEY_WORKERS} thread workers, 1 ms polls, "
            f"{SESSIONS * LANES} producer threads; {rounds} interleaved rounds after a warm-up; "
            f"load average at the end {load:.1f} on {os.cpu_count()} CPUs"
        )
    report.emit(args.json)


if __name__ == "__main__":
    main()
