"""A placed Session's running turn across a `kill -9` of the Control Node, with nothing queued
behind it (docs/sessions.md "When the Node restarts", docs/machines.md): the restarted
Control ends it `failed` `runtime_lost` at once, never re-run and never left `running`,
as a local Session's dispatched turn; its worker, still running on the Execution Node, is
asked to stop at the machine's hello and is gone, its attempt closed `control_restarted`.
Two real Node processes on 127.0.0.1."""

from __future__ import annotations

from pathlib import Path

from ..review8c._db import alive, query
from ._nodes import enrolled_pair, wait_for
from .test_recovered_stop_lost import START, _config, _starts


def test_a_running_placed_turn_ends_runtime_lost_after_a_control_restart(tmp_path: Path) -> None:
    log = tmp_path / "runs.log"
    with enrolled_pair(tmp_path, _config(log)) as (control, _, project_id):
        created = control.call("session", "create", "--project-id", project_id, "--machine",
                               "box", "--executor", "user:slow")  # fmt: skip
        session_id = created["session"]["sessionId"]
        turn_id = control.call("turn", "send", session_id, "one")["turn"]["turnId"]
        wait_for(lambda: _starts(log) == ["one"], "the placed turn did not start", control)
        worker = int(START.findall(log.read_text())[0][1])
        port = control.machines_port()
        control.kill9()
        control.flags = ("--machines-listen", f"127.0.0.1:{port}")
        control.start()
        turn = control.call("turn", "show", turn_id)["turn"]  # answered after recovery
        assert (turn["state"], turn.get("failureReason")) == ("failed", "runtime_lost"), turn
        wait_for(lambda: not alive(worker), "the old worker was not stopped", control, 90)
        wait_for(lambda: query(control.home, "SELECT end_reason FROM worker_attempts WHERE"
                               " session_id = ?", (session_id,))[0][0] is not None,
                 "the old attempt was not closed", control, 90)  # fmt: skip
        [(reason,)] = query(control.home, "SELECT end_reason FROM worker_attempts WHERE"
                            " session_id = ?", (session_id,))  # fmt: skip
        assert str(reason).startswith("control_restarted"), reason
        assert _starts(log) == ["one"]  # never re-run
        assert "end one" not in log.read_text()
