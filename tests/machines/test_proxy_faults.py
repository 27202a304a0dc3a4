"""Lease faults staged with real processes and the fault proxy (simulations) between the
Execution Node and the Control Node: the grant responses lost (a one-way partition toward
the Node) for longer than the lease."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import trio

from simulations import start_proxy
from supervision.leases import CLOCK_ERROR_BUDGET_MS

from ._nodes import NodeProc, checked_traces, enroll, link_of, wait_for
from .test_placement_e2e import CONFIG, _attempts, _epoch, _ppid, _turn

_STOP = re.compile(r"bounded stop begins \(deadline\) at mono (\d+) ms, local deadline (\d+)")
_STOPPED = re.compile(r"epoch (\d+): stopped at mono (\d+) ms")


def _blocking(function: Any, *args: Any) -> Any:
    return trio.to_thread.run_sync(lambda: function(*args))


async def test_lost_grant_responses_stop_the_node_and_block_placement(tmp_path: Path) -> None:
    """Grant frames toward the Node dropped (its requests and reports still reach Control)
    past the lease: Control keeps issuing grants no report confirms, so nothing new is
    placed; the Node's lease ends at its local deadline, it stops its worker and reports
    stopped, and Control launches the next epoch only on that report; it runs once its grant
    gets through, after the heal. Prints the figures."""
    home = tmp_path / "control"
    home.mkdir(mode=0o700)
    (home / "config.jsonc").write_text(CONFIG)
    control = NodeProc(home, "--machines-listen", "127.0.0.1:0")
    execution: NodeProc | None = None
    async with trio.open_nursery() as nursery:
        try:
            await _blocking(control.start)
            port = await _blocking(control.machines_port)
            proxy = await start_proxy(nursery, port, seed=16)
            token = tmp_path / "token.txt"
            token.write_text(await _blocking(enroll, control, "box"))
            execution = NodeProc(tmp_path / "execution", "--execution", "--control",
                                 f"ws://127.0.0.1:{proxy.port}", "--enrollment-file",
                                 str(token))  # fmt: skip
            await _blocking(execution.start)
            project = tmp_path / "project"
            project.mkdir()
            added = await _blocking(control.call, "project", "add", str(project))
            project_id = added["project"]["projectId"]
            created = await _blocking(control.call, "session", "create", "--project-id", project_id,
                                      "--machine", "box", "--executor", "user:slow")  # fmt: skip
            session_id = created["session"]["sessionId"]
            await _blocking(control.maia, "turn", "send", session_id, "work")
            await _blocking(wait_for, lambda: _turn(control, session_id).get("state")
                            == "running", "the remote turn did not start", control)  # fmt: skip
            [(_, pid)] = _attempts(control, session_id)
            epoch = _epoch(control)
            proxy.partition(one_way="to_node")
            await _blocking(wait_for, lambda: _STOPPED.search(execution.log()) is not None,
                            "the Node did not stop at its deadline", execution, 90)  # fmt: skip
            assert _ppid(pid) != execution.pid
            # Reports reached Control all along, and none confirmed its newest grant: a
            # second placed Session launches nothing while the grants are lost.
            assert link_of(control, "box")["connected"]
            other = await _blocking(control.call, "session", "create", "--project-id",
                                    project_id, "--machine", "box")  # fmt: skip
            second = other["session"]["sessionId"]
            await _blocking(control.maia, "turn", "send", second, "blocked?")
            await trio.sleep(3)
            assert _attempts(control, second) == []
            # The next epoch comes only from the stopped report (it reached Control), and
            # runs only once its grant gets through: after the heal.
            assert _epoch(control) in (epoch, epoch + 1)
            assert f"grant ({epoch + 1}, 1) applied" not in execution.log()
            proxy.heal()
            await _blocking(wait_for, lambda: f"grant ({epoch + 1}, 1) applied" in execution.log(),
                            "the next epoch did not start after the heal", execution)  # fmt: skip
            start = _STOP.search(execution.log())
            stopped = _STOPPED.search(execution.log())
            assert start is not None
            assert stopped is not None
            stop_start, deadline, stop_end = int(start[1]), int(start[2]), int(stopped[2])
            lost = sum(1 for e in proxy.events if e.fate.value == "partitioned")
            print(f"\nlocal deadline {deadline} ms, stop start +{stop_start - deadline} ms, stop"
                  f" end +{stop_end - deadline} ms; frames dropped toward the Node: {lost};"
                  f" Control link: {json.dumps(link_of(control, 'box'))}")  # fmt: skip
            assert stop_start <= deadline + CLOCK_ERROR_BUDGET_MS
            assert lost > 0
            print(f"trace: {checked_traces(control, execution)}")
        finally:
            if execution is not None:
                await _blocking(execution.stop)
            await _blocking(control.stop)
            nursery.cancel_scope.cancel()
