"""A `kill -9` of the Control Node with a Session placed: two real Node processes on
127.0.0.1 with the fault proxy between them. The restarted Control stands behind a barrier
until a report confirms a grant it issued after the restart. The proxy holds back every
status report toward Control while the barrier is read, so the read cannot race the report
that clears it: without a report, nothing can clear it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import trio

from ._nodes import NodeProc, checked_traces, link_of, trace_events, wait_for
from .test_placement_e2e import _epoch
from .test_proxy_scenarios import BOUND_S, _blocking, _proxied, _session, _turn_answers

STATUS = '{"type":"status",'  # how every status frame's text begins (orjson, field order)


def _since_restart(control: NodeProc, event: str) -> list[dict[str, Any]]:
    """The Control trace's `event`s written after its last `discontinuity` (its restart)."""
    starts = [e["at_ms"] for e in trace_events(control, "discontinuity")]
    assert starts, "the restart left no discontinuity"
    return [e for e in trace_events(control, event) if e["at_ms"] >= starts[-1]]


def _linked(control: NodeProc, seen: list[dict[str, Any]]) -> bool:
    """Whether `machine show` sees the link; the newest read is kept in `seen`."""
    seen[:] = [link_of(control, "box")]
    return bool(seen[-1].get("connected", False))


async def test_kill_9_of_the_control_node_raises_a_barrier(tmp_path: Path) -> None:
    """Control killed and restarted: once the Execution Node is linked again its assignment
    stands behind a barrier (shown by `machine show`) while no status reaches Control; when
    statuses pass, the barrier clears after a grant issued since the restart is reported; the
    lease epoch is unchanged (nothing was relaunched) and a placed Session works again."""
    with trio.fail_after(BOUND_S):
        async with _proxied(tmp_path, seed=41) as p:
            session_id = await _session(p)
            await _turn_answers(p, session_id, "one")
            epoch_before = await _blocking(_epoch, p.control)
            port = await _blocking(p.control.machines_port)
            await _blocking(p.control.kill9)
            p.proxy.drop_containing("to_control", STATUS)  # before the Node can link again
            p.control.flags = ("--machines-listen", f"127.0.0.1:{port}")  # the proxy's target
            await _blocking(p.control.start)
            seen: list[dict[str, Any]] = []
            await _blocking(wait_for, lambda: _linked(p.control, seen),
                            "the Execution Node did not reconnect", p.control)  # fmt: skip
            link = seen[-1]  # the read that saw it linked: no second read to race
            assert link["heartbeats"] == 0, link  # no report reached the restarted Control
            assert link["barrier"] is True, link
            assert not await _blocking(_since_restart, p.control, "report_received")
            p.proxy.heal()
            await _blocking(wait_for, lambda: link_of(p.control, "box").get("barrier") is False,
                            "the barrier never cleared", p.control)  # fmt: skip
            issued = await _blocking(_since_restart, p.control, "grant_issued")
            assert issued, "the barrier cleared without a grant issued after the restart"
            assert await _blocking(_since_restart, p.control, "report_received")
            assert await _blocking(_epoch, p.control) == epoch_before
            await _turn_answers(p, session_id, "two")
            print(f"\ntrace: {checked_traces(p.control, p.execution)}")
