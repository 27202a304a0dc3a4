"""Two Sessions of one Project placed on one machine share the assignment's evidence spool:
their records interleave, and each Session actor takes its own. Through two real Node
processes on loopback: every record reaches Control once, and no acknowledgement ever
covers a record its Session actor had not taken yet (the simulation's `record_not_once`
rule over the real traces)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from ._nodes import checked_traces, trace_events, wait_for
from .test_placement_e2e import Pair, _session, pair

__all__ = ["pair"]  # the fixture, shared with the placement tests
TURNS = 6  # per Session, queued at once in both


def _turns(pair: Pair, session_id: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = pair.control.call("turn", "list", session_id)["turns"]
    return found


def test_two_sessions_of_one_project_share_the_spool_without_losing_records(pair: Pair) -> None:
    """Turns queued in both Sessions at once all complete with their own text; the trace
    shows every record of the shared source stored once and contiguous from 1, and every
    acknowledgement covers only stored records (zero violations)."""
    first, second = _session(pair), _session(pair)
    texts = {sid: [f"{sid[-6:]} turn {n}" for n in range(TURNS)] for sid in (first, second)}
    for n in range(TURNS):
        for session_id in (first, second):
            pair.control.call("turn", "send", session_id, texts[session_id][n])

    def settled() -> bool:
        turns = [t for sid in (first, second) for t in _turns(pair, sid)]
        return len(turns) == 2 * TURNS and all(t["state"] == "completed" for t in turns)

    wait_for(settled, "the turns of both Sessions did not complete", pair.control,
             timeout_s=180.0)  # fmt: skip
    for session_id in (first, second):
        for turn in _turns(pair, session_id):
            shown = str(pair.control.call("turn", "show", turn["turnId"]))
            assert any(text in shown for text in texts[session_id]), shown
    stored = trace_events(pair.control, "record_stored")
    sources = {e["source"] for e in stored}
    assert len(sources) == 1, sources  # one assignment: one shared spool
    copies = Counter(e["sequence"] for e in stored)
    assert set(copies.values()) == {1}, copies
    assert sorted(copies) == list(range(1, max(copies) + 1))
    acknowledged = [e["through"] for e in trace_events(pair.control, "record_acknowledged")]
    assert acknowledged == sorted(acknowledged)
    assert acknowledged[-1] == max(copies)
    checked_traces(pair.control, pair.execution)
