"""SIGKILL of the Control Node while a placed Session's turn runs on an Execution Node, a
second turn queued behind it (docs/machines.md "What you see in each fault", spec MN0 lease
item 10, docs/sessions.md "When the Node restarts"): after Control's restart the running turn
ends once (never re-run), the queued turn runs once, and the Session never has two workers at
a time: the queued turn's program starts only once the first turn's worker is gone."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ..machines._nodes import NodeProc, enrolled_pair, wait_for
from ..machines.test_placement_e2e import _attempts, _ppid
from ._db import alive, query

ENDED = ("completed", "failed", "interrupted")
START = re.compile(r"start (\S+) (\d+)")


def _script(log: Path) -> str:
    return (f'read line; echo "start $line $$" >> {log}; sleep 25; '
            f'echo "end $line" >> {log}; echo "$line"')  # fmt: skip


@pytest.fixture
def pair(tmp_path: Path) -> Iterator[tuple[NodeProc, NodeProc, str, Path]]:
    """A Control Node with a logging slow exec executor, an Execution Node enrolled as box."""
    log = tmp_path / "runs.log"
    config = json.dumps({"executors": {"slow": {
        "kind": "exec", "argv": ["/bin/sh", "-c", _script(log)]}}})  # fmt: skip
    with enrolled_pair(tmp_path, config) as (control, execution, project_id):
        yield control, execution, project_id, log


def _turns(control: NodeProc, session_id: str) -> dict[str, dict[str, Any]]:
    listed = control.call("turn", "list", session_id)["turns"]
    return {t["turnId"]: t for t in listed}


def _starts(log: Path) -> list[tuple[str, int]]:
    text = log.read_text() if log.exists() else ""
    return [(m[1], int(m[2])) for m in START.finditer(text)]


def test_control_killed_mid_placed_turn_never_runs_two_workers(
    pair: tuple[NodeProc, NodeProc, str, Path],
) -> None:
    """The first turn ends once; the queued one starts only after the first worker is gone."""
    control, execution, project_id, log = pair
    session_id = control.call("session", "create", "--project-id", project_id, "--machine",
                              "box", "--executor", "user:slow")["session"]["sessionId"]  # fmt: skip
    one = control.call("turn", "send", session_id, "one", "--command-id", "one")["turn"]["turnId"]
    two = control.call("turn", "send", session_id, "two", "--command-id", "two")["turn"]["turnId"]
    wait_for(lambda: [s for s, _ in _starts(log)] == ["one"], "turn one did not start", control)
    [(first, worker)] = _attempts(control, session_id)
    assert _ppid(worker) == execution.pid
    port = control.machines_port()
    control.kill9()
    control.flags = ("--machines-listen", f"127.0.0.1:{port}")
    control.start()
    wait_for(lambda: "two" in [s for s, _ in _starts(log)], "turn two never started", control,
             timeout_s=90)  # fmt: skip
    first_alive_at_two = alive(worker)
    wait_for(lambda: all(t["state"] in ENDED for t in _turns(control, session_id).values()),
             "the turns did not end", control, timeout_s=90)  # fmt: skip
    turns = _turns(control, session_id)
    assert turns[two]["state"] == "completed", turns[two]
    assert turns[one]["state"] in ("failed", "interrupted"), turns[one]
    assert [s for s, _ in _starts(log)] == ["one", "two"]  # neither ran twice
    assert not first_alive_at_two, "turn two's worker started while turn one's still ran"
    assert "end one" not in log.read_text(), "turn one's program ran on after Control lost it"
    [(reason,)] = query(control.home, "SELECT end_reason FROM worker_attempts WHERE"
                        " attempt_id = ?", (first,))  # fmt: skip
    assert str(reason).startswith("control_restarted"), reason  # closed once seen gone
