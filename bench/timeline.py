"""Where one turn's wall time goes at one in flight: the Node and its worker traced with strace.

A real Node on a temporary home, one Session, one turn at a time over the SDK the way
bench/peers.py's Maia lane drives it (`send_and_wait`: one `turn.send` that waits for the
turn's end). Two phases:

* traced: the Node is started under `strace -ff --seccomp-bpf` (only five syscalls stop,
  so the rest run at full speed; the worker it spawns is traced too). Per turn, from the
  Node's read of the request to its write of the answer, the anchors are: the fsyncs
  (`fdatasync`, one per commit), the Node's write of the prompt to the worker, the
  worker's read of it, the worker's event writes, the Node's event reads. Reported as
  medians: the serial path's seven segments (request -> commit 1 -> prompt -> worker ->
  its first event -> the Node's read -> last commit -> answer), the whole turn, the fsync,
  and per turn the commits, the Node's event reads and the worker's writes;
* untraced: a plain Node, the same turns: the p50, and per turn from /proc the Node's read
  syscalls and the worker's write syscalls (every read: sockets, pipes, files) and the CPU
  of each (user + system, all threads; the clock tick is 10 ms: run long for these).

strace slows every traced syscall (the traced turn is a few times the untraced one), and
it can split what the worker writes in one burst into more reads than untraced; read the
segments' shares and the untraced counts. Without strace the traced figures are skipped
(in `notes`). Measures; asserts nothing.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import trio

from bench._node import START_BOUND_S, start_node
from bench._report import Report, log, parse_args, percentile
from bench.peers import _maia_setup, _send_and_wait
from maia.client import open_client
from maia.core import read_discovery

SYSCALLS = "trace=read,write,sendto,fdatasync"
WARMUP = 30
# (anchor, syscall, how the data starts): the Node reads a client's masked frame (FIN + text
# opcode 0x81) and answers one; frames to the worker start an ack or a prompt line.
_LINE = re.compile(r'^([\d.]+) (read|write|sendto|fdatasync)\((\d+)(?:, "(.{0,24}))?.*<([\d.]+)>$')
_ANCHORS = (
    ("request", "read", "\\201"),
    ("answer", "write", "\\201"),
    ("answer", "sendto", "\\201"),
    ("prompt", "write", '{\\"type\\":\\"ack\\"'),
    ("prompt", "write", '{\\"type\\":\\"prompt\\"'),
    ("worker_read", "read", '{\\"type\\":\\"ack\\"'),
    ("worker_read", "read", '{\\"type\\":\\"prompt\\"'),
    ("worker_write", "write", '{\\"type\\":\\"event\\"'),
    ("event", "read", '{\\"type\\":\\"event\\"'),
)
# The serial path, in order (they add up to the turn): (name, from, to).
SEGMENTS = (
    ("request_to_commit1", "request", "commit1"),
    ("commit1_to_prompt", "commit1", "prompt"),
    ("prompt_to_worker", "prompt", "worker_read"),  # the pipe, the worker's reader thread
    ("worker_to_first_write", "worker_read", "worker_write"),  # the SDK and the handler
    ("first_write_to_event", "worker_write", "event"),  # the pipe, the Node's reader
    ("event_to_last_commit", "event", "commit_last"),  # the pump, the actor, the writer
    ("last_commit_to_answer", "commit_last", "answer"),
)
COUNTS = ("commits", "event_reads", "worker_writes")


def anchor(line: str) -> tuple[str, float] | None:
    """The anchor a strace line is and when its syscall returned (ms), or None."""
    found = _LINE.match(line)
    if found is None or "= -1" in line:
        return None
    stamp, call, _fd, data, took = found.groups()
    at = (float(stamp) + float(took)) * 1000  # a blocking read's data is there at its end
    if call == "fdatasync":
        return ("commit", at)
    for name, syscall, start in _ANCHORS:
        if call == syscall and data is not None and data.startswith(start):
            return (name, at)
    return None


def turns_of(anchors: list[tuple[str, float]]) -> list[dict[str, float]]:
    """Each complete turn's anchor times and counts: from a request to the next answer,
    a commit before the prompt, the worker's read, its writes, the Node's reads, a
    commit after them."""
    out: list[dict[str, float]] = []
    current: list[tuple[str, float]] | None = None
    for name, at in sorted(anchors, key=lambda pair: pair[1]):
        if name == "request":
            current = [(name, at)]
        elif current is not None:
            current.append((name, at))
            if name == "answer":
                turn = _turn(current)
                if turn is not None:
                    out.append(turn)
                current = None
    return out


def _turn(window: list[tuple[str, float]]) -> dict[str, float] | None:
    first: dict[str, float] = {}
    for name, at in window:
        first.setdefault(name, at)
    needed = ("commit", "prompt", "worker_read", "worker_write", "event")
    if any(name not in first for name in needed) or first["commit"] > first["prompt"]:
        return None
    last_commit = max(at for name, at in window if name == "commit")
    if last_commit < first["event"]:
        return None
    named = {**first, "commit1": first["commit"], "commit_last": last_commit}
    named["commits"] = sum(name == "commit" for name, _ in window)
    named["event_reads"] = sum(name == "event" for name, _ in window)
    named["worker_writes"] = sum(name == "worker_write" for name, _ in window)
    return named


def summarize(turns: list[dict[str, float]], report: Report) -> None:
    """Medians of the segments and the turn, and the mean of each count per turn."""
    for name, start, end in (*SEGMENTS, ("traced_turn", "request", "answer")):
        spans = [t[end] - t[start] for t in turns]
        report.figures[f"{name}_p50_ms"] = round(statistics.median(spans), 3)
    for name in COUNTS:
        report.figures[f"{name}_per_turn"] = round(statistics.mean(t[name] for t in turns), 2)


def _fsyncs_ms(lines: list[str]) -> list[float]:
    out = []
    for line in lines:
        found = _LINE.match(line)
        if found is not None and found.group(2) == "fdatasync":
            out.append(float(found.group(5)) * 1000)
    return out


async def _turns(
    home: Path, session_id: str, count: int, between_s: float
) -> tuple[float, list[float]]:
    """(the wall clock when the warm-up ended, each measured turn's seconds)."""
    async with open_client(home=home, timeout_s=60) as client:
        for _ in range(WARMUP):  # the worker is up, the caches are hot
            await _send_and_wait(client, session_id)
        began, took = time.time(), []
        for _ in range(count):
            took.append(await _send_and_wait(client, session_id))
            await trio.sleep(between_s)  # apart: one turn's anchors at a time
        return began, took


def traced(scratch: Path, turns: int) -> list[str]:
    """strace's lines for `turns` turns (after a warm-up) of a Node started under it."""
    home, out = scratch / "traced-home", scratch / "trace" / "t"
    out.parent.mkdir()
    tracer = subprocess.Popen(
        ["strace", "-ff", "--seccomp-bpf", "-ttt", "-T", "-s", "32", "-e", SYSCALLS, "-o",
         str(out), sys.executable, "-P", "-m", "maia.node", "start", "--home", str(home)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + START_BOUND_S
        while (record := read_discovery(home / "node.json")) is None:
            if time.monotonic() > deadline or tracer.poll() is not None:
                raise SystemExit("bench/timeline.py: the traced Node did not start")
            time.sleep(0.05)
        session_id = trio.run(_maia_setup, home, 1)[0]
        began, _ = trio.run(_turns, home, session_id, turns, 0.01)
        os.kill(record.pid, signal.SIGTERM)
        tracer.wait(timeout=60)
    finally:
        if tracer.poll() is None:
            tracer.kill()
            tracer.wait()
    lines = []
    for path in out.parent.iterdir():
        for line in path.read_text(errors="replace").splitlines():
            if line[:1].isdigit() and float(line.split(" ", 1)[0]) >= began:
                lines.append(line)
    return lines


def _io(pid: int, key: str) -> int:
    for line in Path(f"/proc/{pid}/io").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    return 0


def _cpu_ms(pid: int) -> float:
    """Process `pid`'s user + system CPU so far (all its threads), in ms."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


def _counters(node: int, worker: int) -> list[float]:
    return [_io(node, "syscr"), _io(worker, "syscw"), _cpu_ms(node), _cpu_ms(worker)]


def untraced(scratch: Path, turns: int, report: Report) -> None:
    """The p50, and per turn the syscalls (/proc/PID/io) and the CPU of the Node and of
    its worker, over a plain Node's turns."""
    home = scratch / "home"
    node = start_node(home, "bench/timeline.py")
    try:
        session_id = trio.run(_maia_setup, home, 1)[0]
        trio.run(_turns, home, session_id, 0, 0.0)  # the worker is spawned, the warm-up
        worker = int(subprocess.run(["pgrep", "-P", str(node.pid)], capture_output=True,
                                    text=True).stdout.split()[0])  # fmt: skip
        before = _counters(node.pid, worker)
        _, took = trio.run(_turns, home, session_id, turns, 0.0)
        after = _counters(node.pid, worker)
    finally:
        node.terminate()
        node.wait(timeout=60)
    per_turn = [(a - b) / (turns + WARMUP) for a, b in zip(after, before, strict=True)]
    report.figures["untraced_p50_ms"] = round(percentile(took, 0.5) * 1000, 3)
    for index, name in enumerate(("node_reads", "worker_writes", "node_cpu_ms", "worker_cpu_ms")):
        report.figures[f"untraced_{name}_per_turn"] = round(per_turn[index], 3)


def main() -> None:
    args = parse_args(__doc__ or "timeline")
    turns = 40 if args.quick else int(os.environ.get("MAIA_BENCH_TURNS", "200"))
    report = Report("timeline")
    with tempfile.TemporaryDirectory() as folder:
        scratch = Path(folder)
        log(f"timeline: {turns * 5} untraced turns")
        untraced(scratch, turns * 5, report)
        if shutil.which("strace") is None:
            report.notes = "traced figures skipped: strace is not installed"
            report.emit(args.json)
            return
        log(f"timeline: {turns} traced turns")
        began = time.perf_counter()
        lines = traced(scratch, turns)
    found = turns_of([a for a in map(anchor, lines) if a is not None])
    if found:
        summarize(found, report)
    syncs = _fsyncs_ms(lines)
    if syncs:
        report.figures["fsync_p50_ms"] = round(statistics.median(syncs), 3)
    report.notes = (
        f"{len(found)} of {turns} traced turns complete (request, commit, prompt, worker read "
        f"and write, event read, commit, answer), traced in {time.perf_counter() - began:.1f} s;"
        f" strace inflates every traced figure: read the shares; load {os.getloadavg()[0]:.1f}"
    )
    report.emit(args.json)


if __name__ == "__main__":
    main()
