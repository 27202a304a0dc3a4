"""Sessions placed on an Execution Node, through two real Node processes on loopback: the
worker runs under the Execution Node, its evidence reads at the Control Node, and a
`kill -9` of the Execution Node never lets a replacement start before cleanup is reconciled
(a `kill -9` of the Control Node, and its barrier: test_control_restart)."""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import orjson
import pytest

from simulations import check_trace, merge_traces, read_trace
from supervision.leases import CLOCK_ERROR_BUDGET_MS, STOP_BOUND_MS

from ._nodes import NodeProc, checked_traces, enrolled_pair, link_of, trace_events, wait_for

CONFIG = json.dumps({"executors": {"slow": {"kind": "exec", "argv": [
    "/bin/sh", "-c", "echo started; sleep 600; echo late"]}}})  # fmt: skip


@attrs.frozen
class Pair:
    control: NodeProc
    execution: NodeProc
    project_id: str
    base: Path


@pytest.fixture
def pair(tmp_path: Path) -> Iterator[Pair]:
    """A Control Node (with a slow exec executor) and an Execution Node enrolled as `box`."""
    with enrolled_pair(tmp_path, CONFIG) as (control, execution, project_id):
        yield Pair(control, execution, project_id, tmp_path)


def _session(pair: Pair, *extra: str) -> str:
    created = pair.control.call("session", "create", "--project-id", pair.project_id,
                                "--machine", "box", *extra)  # fmt: skip
    session_id: str = created["session"]["sessionId"]
    return session_id


def _attempts(control: NodeProc, session_id: str) -> list[tuple[str, int]]:
    conn = sqlite3.connect(f"file:{control.home / 'maia.db'}?mode=ro", uri=True)
    try:
        rows = conn.execute("SELECT attempt_id, pid FROM worker_attempts WHERE session_id = ?"
                            " ORDER BY epoch", (session_id,)).fetchall()  # fmt: skip
    finally:
        conn.close()
    return [(str(a), int(p)) for a, p in rows]


def _ppid(pid: int) -> int | None:
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return None
    return int(next(line.split()[1] for line in text.splitlines() if line.startswith("PPid:")))


def _turn(control: NodeProc, session_id: str) -> dict[str, Any]:
    turns: list[dict[str, Any]] = control.call("turn", "list", session_id)["turns"]
    return turns[0] if turns else {}


def test_a_placed_session_runs_under_the_execution_node(pair: Pair) -> None:
    """`turn send --wait` at Control answers from a worker whose parent is the Execution Node
    (checked in /proc); the turn and its events read at Control."""
    session_id = _session(pair)
    sent = pair.control.maia("turn", "send", session_id, "hello remote", "--wait",
                             "--timeout", "60s")  # fmt: skip
    assert "hello remote" in sent.stdout
    [(_, pid)] = _attempts(pair.control, session_id)
    assert _ppid(pid) == pair.execution.pid  # the worker is the Execution Node's child
    turn = _turn(pair.control, session_id)
    assert turn["state"] == "completed"
    shown = pair.control.call("turn", "show", turn["turnId"])
    assert "hello remote" in json.dumps(shown)
    events = pair.control.call("events", "read", "--limit", "500")["events"]
    mine = [e.get("eventType") or e.get("type") for e in events
            if e.get("sessionId") == session_id or e.get("ownerId") == session_id]  # fmt: skip
    assert "turn.completed" in mine, mine
    assert (pair.execution.home / "machine-leases.json").stat().st_mode & 0o777 == 0o600
    verdict = checked_traces(pair.control, pair.execution)
    kinds = {e["event"] for node in (pair.control, pair.execution)
             for e in trace_events_all(node)}  # fmt: skip
    assert {"launch", "grant_issued", "report_received", "placement", "run_started",
            "record_stored", "record_acknowledged"} <= kinds, kinds  # fmt: skip
    assert verdict.checks > 0
    _planted_violation_is_found(pair)


def _planted_violation_is_found(pair: Pair) -> None:
    """A copy of the real trace with one planted event: a launch of the next epoch while no
    `stopped` report for the running one was heard. The checker reads it and names it."""
    merged = merge_traces(read_trace(pair.control.trace_path),
                          read_trace(pair.execution.trace_path))  # fmt: skip
    launch = next(e for e in merged if e["event"] == "launch")
    planted = {**launch, "at_ms": merged[-1]["at_ms"] + 1, "lease_epoch": launch["lease_epoch"] + 1}
    copy = pair.base / "planted.trace.jsonl"
    copy.write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in [*merged, planted]))
    verdict = check_trace(read_trace(copy))
    assert [v.invariant for v in verdict.violations] == ["replacement_before_cleanup"]


def test_kill_9_of_the_execution_node_mid_turn(pair: Pair) -> None:
    """Execution Node killed mid-turn: the turn stays running and no replacement worker is
    launched while the Node is gone; after its restart it reports the attempt gone (cleanup
    reconciled) and the turn resolves `runtime_lost`."""
    session_id = _session(pair, "--executor", "user:slow")
    pair.control.maia("turn", "send", session_id, "work")
    wait_for(lambda: _turn(pair.control, session_id).get("state") == "running",
             "the remote turn did not start", pair.control)  # fmt: skip
    [(_, pid)] = _attempts(pair.control, session_id)
    assert _ppid(pid) == pair.execution.pid
    pair.execution.kill9()
    wait_for(lambda: not link_of(pair.control, "box")["connected"],
             "the Control Node still sees the link", pair.control, timeout_s=40)  # fmt: skip
    assert _turn(pair.control, session_id)["state"] == "running"  # outcome unknown: held
    assert len(_attempts(pair.control, session_id)) == 1  # no replacement
    pair.execution.start()
    wait_for(lambda: _turn(pair.control, session_id).get("state") == "failed",
             "the turn was not resolved after the restart", pair.control)  # fmt: skip
    turn = pair.control.call("turn", "show", _turn(pair.control, session_id)["turnId"])["turn"]
    # The worker's runtime (its Execution Node) was lost: the turn's reason says so.
    assert turn["failureReason"] == "runtime_lost", turn
    wait_for(lambda: _ppid(pid) is None or _ppid(pid) != pair.execution.pid,
             "the old worker still runs", pair.execution)  # fmt: skip
    assert not os.path.exists(f"/proc/{pid}") or _ppid(pid) != pair.execution.pid
    # The restarted Node confirms the old run stopped; the trace shows one run at a time.
    assert trace_events(pair.execution, "run_stopped"), "no run_stopped after the restart"
    print(f"\ntrace: {checked_traces(pair.control, pair.execution)}")


def trace_events_all(node: NodeProc) -> list[dict[str, Any]]:
    return [e for kind in ("launch", "grant_issued", "report_received", "placement",
                           "run_started", "record_stored", "record_acknowledged")
            for e in trace_events(node, kind)]  # fmt: skip


def _epoch(control: NodeProc) -> int:
    conn = sqlite3.connect(f"file:{control.home / 'maia.db'}?mode=ro", uri=True)
    try:
        return int(conn.execute("SELECT lease_epoch FROM machine_assignments").fetchone()[0])
    finally:
        conn.close()


_STOP = re.compile(r"bounded stop begins \(deadline\) at mono (\d+) ms, local deadline (\d+)")
_STOPPED = re.compile(r"epoch (\d+): stopped at mono (\d+) ms")


def test_a_partition_longer_than_the_lease_stops_by_the_local_deadline(pair: Pair) -> None:
    """The Control Node frozen (SIGSTOP: neither side hears the other) longer than the
    lease: the Execution Node begins its bounded stop by its local deadline (within the clock
    error budget), stops the worker, and after healing (SIGCONT) reports `stopped`; the turn
    resolves and Control launches the next epoch only after that report. Prints the figures."""
    session_id = _session(pair, "--executor", "user:slow")
    pair.control.maia("turn", "send", session_id, "work")
    wait_for(lambda: _turn(pair.control, session_id).get("state") == "running",
             "the remote turn did not start", pair.control)  # fmt: skip
    [(_, pid)] = _attempts(pair.control, session_id)
    horizon_before = link_of(pair.control, "box").get("leaseHorizonInMs")
    epoch_before = _epoch(pair.control)
    os.kill(pair.control.pid, signal.SIGSTOP)
    try:
        wait_for(lambda: _STOPPED.search(pair.execution.log()) is not None,
                 "the Execution Node did not stop at its deadline", pair.execution,
                 timeout_s=90)  # fmt: skip
        assert _ppid(pid) != pair.execution.pid  # the worker is gone
    finally:
        os.kill(pair.control.pid, signal.SIGCONT)
    start = _STOP.search(pair.execution.log())
    stopped = _STOPPED.search(pair.execution.log())
    assert start is not None
    assert stopped is not None
    stop_start, deadline, stop_end = int(start[1]), int(start[2]), int(stopped[2])
    print(f"\nlocal deadline {deadline} ms, stop start {stop_start} ms (+{stop_start - deadline}),"
          f" stop end {stop_end} ms (+{stop_end - deadline}); Control horizon before the"
          f" partition: {horizon_before} ms ahead")  # fmt: skip
    assert stop_start <= deadline + CLOCK_ERROR_BUDGET_MS  # before Control's horizon
    assert stop_end - stop_start <= STOP_BOUND_MS
    # The Node's own record of the stop (sent again after the heal) resolves the turn:
    # `interrupted` when the stop's interrupt ended it, `failed` when it had to be killed.
    wait_for(lambda: _turn(pair.control, session_id).get("state") in ("interrupted", "failed"),
             "the turn was not resolved after healing", pair.control)  # fmt: skip
    print(f"turn resolved {_turn(pair.control, session_id)['state']}")
    wait_for(lambda: _epoch(pair.control) == epoch_before + 1,
             "no new epoch after the stopped report", pair.control)  # fmt: skip
    wait_for(lambda: any(e["lease_epoch"] == epoch_before + 1
                         for e in trace_events(pair.control, "launch")),
             "the next epoch's launch is not in the trace", pair.control)  # fmt: skip
    print(f"\ntrace: {checked_traces(pair.control, pair.execution)}")
