"""Where one turn's wall time goes at one in flight: the Node traced with strace.

A real Node on a temporary home, one Session, `turn.send` then `turn.wait` over the SDK
(bench/peers.py's Maia lane), one turn at a time. strace (`-f -tt -T`, five syscalls only)
records, per turn, the Node's eight anchors: the send's request read, commit 1's fsync
done, the prompt's write to the worker, the send's answer, the wait's request, the worker's
first event read, commit 2's fsync done, the wait's answer. Reported as medians: the serial
path's five segments (request -> commit 1 -> prompt -> event -> commit 2 -> answer), the
client's round trip beside it, the fsync itself, the whole turn under strace, and how
many turns had the prompt written after the send's answer or the event before the wait.

strace slows every traced syscall (figures are several times the untraced ones), so read
the segments' shares, not their sizes. Without strace the figures are reported as skipped
in `notes`. Measures; asserts nothing.
"""

from __future__ import annotations

import re
import shutil
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
from bench._report import Report, log, parse_args
from bench.peers import _maia_setup, _turn
from maia.client import open_client

SYSCALLS = "trace=read,write,recvfrom,sendto,fdatasync"
# A turn's anchors; the middle pairs come in either order (trio runs a batch's tasks in
# either order; the worker's event may come before the client's turn.wait).
FIRST, MIDDLE, LAST = (
    ("request", "commit"),
    ("prompt", "answer", "request", "event"),
    ("commit", "answer"),
)
# The serial path (they add up to the turn) and, off it, the client's round trip.
SEGMENTS = {
    "request_to_commit1": ("request1", "commit1"),
    "commit1_to_prompt": ("commit1", "prompt"),
    "prompt_to_event": ("prompt", "event"),  # the pipe, the worker, the pipe
    "event_to_commit2": ("event", "commit2"),
    "commit2_to_answer": ("commit2", "answer2"),
    "client_send_answer_to_wait": ("answer1", "request2"),  # overlaps the worker's turn
}
_STAMP = re.compile(r"^\d+\s+(\d+):(\d+):([\d.]+)\s")
_TOOK = re.compile(r"<([\d.]+)>\s*$")


def _anchor(line: str) -> tuple[str, float] | None:
    """The anchor a strace line is (and its time in ms), or None."""
    stamp = _STAMP.match(line)
    if stamp is None or "EAGAIN" in line or "unfinished" in line:
        return None
    h, m, s = stamp.groups()
    at = (int(h) * 3600 + int(m) * 60 + float(s)) * 1000
    if "fdatasync(" in line:
        took = _TOOK.search(line)
        return ("commit", at + (float(took.group(1)) * 1000 if took else 0.0))
    if "recvfrom(" in line and '"\\201' in line:  # a client's WebSocket frame
        return ("request", at)
    if re.search(r'\b(sendto|write)\(\d+, "\\201~', line):  # a text frame to the client
        return ("answer", at)  # (written straight to the socket: write, else sendto)
    if re.search(r"\bwrite\(\d+, \"\{", line):  # a line to the worker (ack + prompt)
        return ("prompt", at)
    if re.search(r"\bread\(\d+, \"\{\\\"type\\\":\\\"event", line):
        return ("event", at)
    return None


def _turn_anchors(window: list[tuple[str, float]]) -> dict[str, float] | None:
    """The window's anchors by name, if it is one turn's eight (else None)."""
    kinds = [kind for kind, _ in window]
    if tuple(kinds[:2]) != FIRST or tuple(kinds[6:]) != LAST:
        return None
    if sorted(kinds[2:4]) != ["answer", "prompt"] or sorted(kinds[4:6]) != ["event", "request"]:
        return None
    named = {"request1": window[0][1], "commit1": window[1][1], "commit2": window[6][1],
             "answer2": window[7][1]}  # fmt: skip
    for kind, at in window[2:6]:
        named["answer1" if kind == "answer" else "request2" if kind == "request" else kind] = at
    return named


def segments(lines: list[str]) -> dict[str, list[float]]:
    """Per segment, its length (ms) in every turn whose eight anchors came as one turn's;
    `prompt_after_answer` and `event_before_wait` list 1.0 per turn so ordered."""
    found = [a for a in map(_anchor, lines) if a is not None]
    names = (*SEGMENTS, "turn", "prompt_after_answer", "event_before_wait")
    out: dict[str, list[float]] = {name: [] for name in names}
    index, size = 0, len(FIRST) + len(MIDDLE) + len(LAST)
    while index + size <= len(found):
        named = _turn_anchors(found[index : index + size])
        if named is None:
            index += 1
            continue
        for name, (a, b) in SEGMENTS.items():
            out[name].append(named[b] - named[a])
        out["turn"].append(named["answer2"] - named["request1"])
        if named["prompt"] > named["answer1"]:
            out["prompt_after_answer"].append(1.0)
        if named["event"] < named["request2"]:
            out["event_before_wait"].append(1.0)
        index += size
    return out


def fsyncs_ms(lines: list[str]) -> list[float]:
    return [float(m.group(1)) * 1000 for line in lines if "fdatasync(" in line
            if (m := _TOOK.search(line))]  # fmt: skip


def traced_run(home: Path, pid: int, session_id: str, turns: int, out: Path) -> None:
    async def main() -> None:
        async with open_client(home=home, timeout_s=60) as client:
            for _ in range(30):  # warm-up: the worker is up, the caches are hot
                await _turn(client, session_id)
            tracer = await trio.lowlevel.open_process(
                ["strace", "-f", "-tt", "-T", "-e", SYSCALLS, "-o", str(out), "-p", str(pid)],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            )  # fmt: skip
            try:
                await trio.sleep(1.5)  # strace attaches to every thread
                for _ in range(turns):
                    await _turn(client, session_id)
                    await trio.sleep(0.01)  # turns apart: one turn's anchors at a time
            finally:
                tracer.terminate()
                with trio.move_on_after(30):
                    await tracer.wait()

    trio.run(main)


def main() -> None:
    args = parse_args(__doc__ or "timeline")
    turns = 40 if args.quick else 200
    report = Report("timeline")
    if shutil.which("strace") is None:
        report.notes = "skipped: strace is not installed"
        report.emit(args.json)
        return
    with tempfile.TemporaryDirectory() as scratch:
        home = Path(scratch) / "home"
        node = start_node(home, "bench/timeline.py")
        try:
            session_id = trio.run(_maia_setup, home, 1)[0]
            log(f"timeline: {turns} traced turns")
            began = time.perf_counter()
            trace = Path(scratch) / "strace.txt"
            traced_run(home, node.pid, session_id, turns, trace)
            lines = trace.read_text(errors="replace").splitlines()
        finally:
            node.terminate()
            node.wait(timeout=60)
    found = segments(lines)
    for name in ("prompt_after_answer", "event_before_wait"):
        report.figures[f"turns_{name}"] = len(found.pop(name))
    for name, values in found.items():
        if values:
            report.figures[f"{name}_p50_ms"] = round(statistics.median(values), 3)
    syncs = fsyncs_ms(lines)
    if syncs:
        report.figures["fsync_p50_ms"] = round(statistics.median(syncs), 3)
    report.notes = (
        f"{len(found['turn'])} of {turns} turns with all eight anchors, traced in "
        f"{time.perf_counter() - began:.1f} s; strace inflates every figure: read the shares"
    )
    report.emit(args.json)


if __name__ == "__main__":
    main()
