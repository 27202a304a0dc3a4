"""turn.interrupt and session.stop declare the events they write (what a command's own
transaction puts in the journal under its commandId), and session.stop's receipt names the
turns it ended: a real Node, real echo workers (`/sleep` keeps a turn running)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from maia.protocol import REGISTRY

from ._api import Api, api_of, command, real_node


def _caused(api: Api, command_id: str) -> set[str]:
    """The event types the journal holds under `command_id`."""
    page = api.call("events.read", {"position": {"kind": "start"}, "limit": 500})
    return {e["eventType"] for e in page["events"] if e.get("commandId") == command_id}


def _declared(op_id: str) -> set[str]:
    op = REGISTRY.get(op_id)
    assert op is not None
    return set(op.event_types)


def _running(api: Api, session_id: str, text: str) -> dict[str, Any]:
    turn: dict[str, Any] = api.call(
        "turn.send", {"commandId": command(), "sessionId": session_id, "text": text}
    )["turn"]
    api.call("turn.wait", {"turnId": turn["turnId"], "states": ["running"],
                           "waitMilliseconds": 4000})  # fmt: skip
    return turn


def _queued(api: Api, session_id: str) -> dict[str, Any]:
    turn: dict[str, Any] = api.call(
        "turn.send", {"commandId": command(), "sessionId": session_id, "text": "later"}
    )["turn"]
    return turn


def test_turn_interrupt_declares_what_it_writes(tmp_path: Path) -> None:
    """An interrupt of a running turn writes turn.interrupt_requested, of a queued one
    turn.failed (rejected): both declared."""
    with real_node(tmp_path) as node, api_of(node) as api:
        session_id = api.session(api.project(tmp_path / "p"))["sessionId"]
        slow = _running(api, session_id, "/sleep 60000 busy")
        queued = _queued(api, session_id)
        seen: set[str] = set()
        for turn in (queued, slow):
            command_id = command()
            api.call("turn.interrupt", {"commandId": command_id, "turnId": turn["turnId"]})
            seen |= _caused(api, command_id)
        assert seen == {"turn.failed", "turn.interrupt_requested"}
        assert seen <= _declared("turn.interrupt"), (seen, _declared("turn.interrupt"))


def test_session_stop_declares_its_events_and_targets_the_turns_it_ends(tmp_path: Path) -> None:
    """A stop of a running Session with a queued turn writes session.stopping and the queued
    turn's turn.failed, declared; its receipt targets the Session, the queued turn (its
    revisions) and the running turn it stops."""
    with real_node(tmp_path) as node, api_of(node) as api:
        session_id = api.session(api.project(tmp_path / "p"))["sessionId"]
        slow = _running(api, session_id, "/sleep 60000 busy")
        queued = _queued(api, session_id)
        command_id = command()
        api.call("session.stop", {"commandId": command_id, "sessionId": session_id})
        api.wait_session(session_id, states=["stopped"])
        seen = _caused(api, command_id)
        assert {"session.stopping", "turn.failed"} <= seen
        declared = _declared("session.stop")
        assert seen - {"session.status.changed", "session.activity.changed"} <= declared, (
            seen, declared)  # fmt: skip
        receipt = api.call("receipt.get", {"commandId": command_id})["receipt"]
        targets = {(t["targetType"], t["targetId"]): t for t in receipt["targets"]}
        assert ("session", session_id) in targets
        rejected = targets[("turn", queued["turnId"])]
        assert (rejected["priorRevision"], rejected["resultRevision"]) == (1, 2)
        assert ("turn", slow["turnId"]) in targets, receipt["targets"]


def test_turn_send_declares_what_it_writes(tmp_path: Path) -> None:
    """A send to a Session with no worker writes turn.queued and session.starting; one to its
    warm worker turn.queued, session.running and turn.dispatching: all declared (the status
    and activity announcements aside, as for the other ops)."""
    derived = {"session.status.changed", "session.activity.changed"}
    with real_node(tmp_path) as node, api_of(node) as api:
        session_id = api.session(api.project(tmp_path / "p"))["sessionId"]
        seen: list[set[str]] = []
        for text in ("cold", "warm"):
            command_id = command()
            api.call("turn.send", {"commandId": command_id, "sessionId": session_id,
                                   "text": text, "waitMilliseconds": 4000})  # fmt: skip
            api.wait_session(session_id, states=["idle"], activities=["idle"])
            seen.append(_caused(api, command_id) - derived)
        assert seen == [{"turn.queued", "session.starting"},
                        {"turn.queued", "session.running", "turn.dispatching"}]  # fmt: skip
        assert seen[0] | seen[1] <= _declared("turn.send"), _declared("turn.send")
