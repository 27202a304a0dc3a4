"""The Session and turn tables: every pair walked, the spec's choices pinned, docs fresh."""

from __future__ import annotations

from typing import Any

import pytest

from actors._diagrams import DOC_PATH, render_document
from actors.session import (
    SESSION_TABLE,
    TABLES,
    TURN_TABLE,
    SessionEvent,
    SessionState,
    TurnEvent,
    TurnState,
)
from maia.protocol import MaiaError


def test_every_pair_either_steps_or_refuses() -> None:
    """Each (state, event) of both tables either has a row or is a typed refusal naming both."""
    for table in TABLES:
        states: list[Any] = list(table.states)
        events: list[Any] = list(table.events)
        for state in states:
            for event in events:
                found = table.get(state, event)
                if found is not None:
                    caller = sorted(found.callers)[0]
                    assert table.step(state, event, caller=caller, expected_revision=1) is found
                    continue
                with pytest.raises(MaiaError) as info:
                    table.step(state, event, caller="node", aggregate_id="x_1")
                assert info.value.details["state"] == state.value
                assert info.value.details["event"] == event.value


def test_session_choices() -> None:
    """stop from idle is immediate; Node restart recovers live Sessions; terminals are final."""
    s, e = SessionState, SessionEvent
    assert SESSION_TABLE.step(s.IDLE, e.STOP, caller="client").target is s.STOPPED
    for state in (s.STARTING, s.RUNNING, s.WAITING_APPROVAL, s.INTERRUPTED, s.RECOVERING):
        assert SESSION_TABLE.step(state, e.NODE_RESTARTED, caller="node").target is s.RECOVERING
    assert SESSION_TABLE.step(s.STOPPING, e.NODE_RESTARTED, caller="node").target is s.STOPPED
    assert SESSION_TABLE.step(s.RECOVERING, e.START, caller="node").target is s.STARTING
    assert SESSION_TABLE.terminal == {s.STOPPED, s.FAILED}
    assert SESSION_TABLE.events_from(s.STOPPED) == ()
    with pytest.raises(MaiaError) as info:
        SESSION_TABLE.step(s.RUNNING, e.STOP, caller="worker")
    assert info.value.code == "role_denied"


def test_turn_choices() -> None:
    """Cancel of a queued turn fails it; cancel after the queue is turn_not_queued."""
    t, e = TurnState, TurnEvent
    assert TURN_TABLE.step(t.QUEUED, e.CANCEL, caller="client", expected_revision=2,
                           revision=2).target is t.FAILED  # fmt: skip
    with pytest.raises(MaiaError) as info:
        TURN_TABLE.step(t.RUNNING, e.CANCEL, caller="client", expected_revision=2)
    assert info.value.code == "turn_not_queued"
    assert TURN_TABLE.step(t.RUNNING, e.RUNTIME_LOST, caller="node").target is t.FAILED
    assert TURN_TABLE.step(t.DISPATCHING, e.RUNTIME_LOST, caller="node").target is t.FAILED
    assert TURN_TABLE.terminal == {t.COMPLETED, t.FAILED, t.INTERRUPTED}


def test_lifecycles_doc_is_fresh() -> None:
    """docs/lifecycles.md equals what the tables render (run python -m actors._diagrams)."""
    assert DOC_PATH.read_text(encoding="utf-8") == render_document()
    text = render_document()
    assert "waiting_approval --> running: session.approval_resolve" in text
    assert "queued --> dispatching: turn.dispatch" in text
