"""Lease faults staged with real processes and the fault proxy (simulations) between the
Execution Node and the Control Node: the grant responses lost (a one-way partition toward
the Node) for longer than the lease."""

from __future__ import annotations

import json
import re
from pathlib import Path

import trio

from supervision.leases import CLOCK_ERROR_BUDGET_MS

from ._nodes import checked_traces, link_of, wait_for
from .test_placement_e2e import _attempts, _epoch, _ppid, _turn
from .test_proxy_scenarios import _blocking, _proxied

_STOP = re.compile(r"bounded stop begins \(deadline\) at mono (\d+) ms, local deadline (\d+)")
_STOPPED = re.compile(r"epoch (\d+): stopped at mono (\d+) ms")


async def test_lost_grant_responses_stop_the_node_and_block_placement(tmp_path: Path) -> None:
    """Grant frames toward the Node dropped (its requests and reports still reach Control)
    past the lease: Control keeps issuing grants no report confirms, so nothing new is
    placed; the Node's lease ends at its local deadline, it stops its worker and reports
    stopped, and Control launches the next epoch only on that report; it runs once its grant
    gets through, after the heal. Prints the figures."""
    async with _proxied(tmp_path, seed=16) as p:
        control, execution, proxy = p.control, p.execution, p.proxy
        created = await _blocking(control.call, "session", "create", "--project-id", p.project_id,
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
                                p.project_id, "--machine", "box")  # fmt: skip
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
