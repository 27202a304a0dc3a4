"""turn.interrupt of a placed turn its remote worker never takes (a real Control Node and
Execution Node on loopback, the echo worker on the Execution Node SIGSTOPped while warm, so
the relayed prompt sits in its pipe): after the bounded wait the turn ends `failed`
`turn_rejected` with the interrupt's receipt, the Execution Node fences and stops that
worker (it never starts the turn, not even once continued), and the Session's next turn runs
once on a new attempt, after the old one was reported gone (spec MN0 item 10)."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from ..review8c._db import alive, wait_gone
from ._nodes import NodeProc, enrolled_pair, wait_for

CONFIG = json.dumps({"executors": {"echo": {"kind": "echo", "env": ["MAIA_ECHO_LOG"]}}})


@pytest.fixture
def nodes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[NodeProc, str]]:
    monkeypatch.setenv("MAIA_ECHO_LOG", str(tmp_path / "echo.log"))
    with enrolled_pair(tmp_path, CONFIG) as (control, _, project_id):
        yield control, project_id


def _attempts(control: NodeProc, session_id: str) -> list[tuple[int, int, str | None]]:
    conn = sqlite3.connect(f"file:{control.home / 'maia.db'}?mode=ro", uri=True)
    try:
        rows = conn.execute("SELECT pid, epoch, ended_ms FROM worker_attempts"
                            " WHERE session_id = ? ORDER BY epoch",
                            (session_id,)).fetchall()  # fmt: skip
    finally:
        conn.close()
    return [(int(p), int(e), None if end is None else str(end)) for p, e, end in rows]


def _started(log: Path) -> list[str]:
    """The turn ids the echo worker started, in order (one line per prompt it began)."""
    return [line.split()[0] for line in log.read_text().splitlines()] if log.exists() else []


def _state(control: NodeProc, turn_id: str) -> tuple[str, str | None]:
    turn = control.call("turn", "show", turn_id)["turn"]
    return turn["state"], turn.get("failureReason")


def test_an_interrupt_ends_a_placed_turn_its_frozen_worker_never_took(
    nodes: tuple[NodeProc, str], tmp_path: Path
) -> None:
    control, project_id = nodes
    log = tmp_path / "echo.log"
    session_id = control.call("session", "create", "--project-id", project_id, "--machine",
                              "box", "--executor", "user:echo")["session"]["sessionId"]  # fmt: skip
    warm = control.call("turn", "send", session_id, "warm", "--command-id", "t0")["turn"]["turnId"]
    wait_for(lambda: _state(control, warm)[0] == "completed", "the warm turn did not complete",
             control)  # fmt: skip
    [(pid, first_epoch, _)] = _attempts(control, session_id)
    os.kill(pid, signal.SIGSTOP)  # the Execution Node's worker: the same host, loopback
    try:
        stuck = control.call("turn", "send", session_id, "never started",
                             "--command-id", "t1")["turn"]["turnId"]  # fmt: skip
        wait_for(lambda: _state(control, stuck)[0] == "dispatching", "not dispatched", control)
        ended = control.call("turn", "interrupt", stuck, "--command-id", "i1")
        assert (ended["turn"]["state"], ended["turn"]["failureReason"]) == (
            "failed", "turn_rejected")  # fmt: skip
        receipt = control.call("receipt", "get", "--command-id", "i1")["receipt"]
        assert receipt["operationId"] == "turn.interrupt"
        assert [t["targetId"] for t in receipt["targets"] if t["targetType"] == "turn"] == [stuck]
        assert wait_gone(pid), "the frozen worker still runs on the Execution Node"
        after = control.call("turn", "send", session_id, "after",
                             "--command-id", "t2")["turn"]["turnId"]  # fmt: skip
        wait_for(lambda: _state(control, after)[0] in ("completed", "failed"),
                 "the next turn did not end", control)  # fmt: skip
        assert _state(control, after) == ("completed", None)
        attempts = _attempts(control, session_id)
        assert len(attempts) == 2
        assert attempts[1][1] > first_epoch
        assert attempts[0][2] is not None  # the old attempt ended before the new one ran
        assert _started(log) == [warm, after]  # the abandoned turn never ran, nothing twice
        assert _state(control, stuck) == ("failed", "turn_rejected")
    finally:
        if alive(pid):
            os.kill(pid, signal.SIGKILL)
