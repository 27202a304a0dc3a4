"""The console's pure parts: the Session cache, event lines, the toolbar state, the output
gate that decides between streaming and paging."""

from __future__ import annotations

import io

from maia.console import FeedEvent, SessionCache
from maia.console._output import OutputGate
from maia.console._render import render_event
from maia.console._status import NodeState

SID = "session_" + "1" * 32


def test_cache_is_bounded_and_forgets_the_least_recently_touched() -> None:
    """Past its bound the cache drops the Session touched longest ago, not the newest."""
    cache = SessionCache(limit=3)
    cache.seed({"sessionId": f"s{n}", "title": None, "state": "idle"} for n in range(5))
    assert [s.session_id for s in cache.sessions()] == ["s4", "s3", "s2"]
    cache.apply(FeedEvent("session.running", "s2", payload={"state": "running"}))
    cache.apply(FeedEvent("session.created", "s5", payload={"title": "new"}))
    assert [s.session_id for s in cache.sessions()] == ["s5", "s2", "s4"]


def test_cache_applies_only_what_it_understands() -> None:
    """State events update the state; unknown Sessions, turn events and archived seeds are
    ignored and report no change."""
    cache = SessionCache()
    cache.seed([{"sessionId": SID, "state": "idle", "archived": False},
                {"sessionId": "gone", "state": "stopped", "archived": True}])  # fmt: skip
    assert len(cache) == 1
    assert cache.apply(FeedEvent("session.stopped", SID, payload={"state": "stopped"}))
    entry = cache.get(SID)
    assert entry is not None
    assert entry.state == "stopped"
    assert not entry.live
    assert not cache.apply(FeedEvent("session.stopped", SID, payload={"state": "stopped"}))
    assert not cache.apply(FeedEvent("session.running", "unknown", payload={"state": "running"}))
    assert not cache.apply(FeedEvent("turn.queued", SID, payload={"turnId": "t"}))


def test_feed_event_from_the_journal_and_its_line() -> None:
    """A journal event becomes a FeedEvent; shown events make one line with time, type,
    Session, title and detail; activity changes are not shown."""
    wire = {
        "eventType": "turn.failed", "sessionId": SID, "occurredAt": "2026-11-30T02:03:04.005Z",
        "payload": {"turnId": "turn_x", "state": "failed", "reason": "runtime_lost"},
    }  # fmt: skip
    event = FeedEvent.from_journal(wire)
    assert event.turn_id == "turn_x"
    cache = SessionCache()
    cache.seed([{"sessionId": SID, "title": "T" * 100, "state": "running"}])
    line = render_event(event, cache)
    assert line is not None
    assert line.startswith(f'[02:03:04] turn.failed {SID} "{"T" * 59}…" turn_x (runtime_lost)')
    quiet = FeedEvent("session.activity.changed", SID, payload={"activity": "idle"})
    assert render_event(quiet, cache) is None


def test_node_state_from_status() -> None:
    """Live Sessions exclude stopped and failed ones; an unreachable Node says how to start."""
    state = NodeState.from_status(
        {
            "nodeId": "node_1",
            "sessionsByState": {"idle": 2, "running": 1, "stopped": 7, "failed": 1},
            "queuedTurns": 3,
            "liveWorkers": 1,
        }
    )
    assert (state.live_sessions, state.queued_turns, state.live_workers) == (3, 3, 1)
    assert "sessions 3 live" in state.toolbar()
    assert "maia node start" in NodeState(reachable=False, problem="unavailable").toolbar()


def test_gate_writes_short_output_and_hands_long_output_to_the_pager() -> None:
    """Short output is written at the end; output longer than the screen is returned for the
    pager; without a screen size nothing is paged."""
    sink = io.StringIO()
    gate = OutputGate(sink, page_lines=3)
    gate.write("a\nb\n")
    assert sink.getvalue() == ""
    assert gate.finish() is None
    assert sink.getvalue() == "a\nb\n"
    gate = OutputGate(sink, page_lines=3)
    gate.write("1\n2\n3\n4\n")
    assert gate.finish() == "1\n2\n3\n4\n"
    gate = OutputGate(io.StringIO(), page_lines=None)
    gate.write("x\n" * 100)
    assert gate.finish() is None


def test_gate_streams_once_released() -> None:
    """After release (a command still running) what was held and what follows pass through."""
    sink = io.StringIO()
    gate = OutputGate(sink, page_lines=1)
    gate.write("first\n")
    gate.release()
    assert sink.getvalue() == "first\n"
    gate.write("second\nthird\n")
    assert sink.getvalue() == "first\nsecond\nthird\n"
    assert gate.finish() is None
