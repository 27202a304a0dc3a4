"""An owner's events never show its aggregateRevision going backwards (events.read at a real
Node with echo workers): a Session's journal holds its turns' events too, and those carried
the turn's own revision (1, 2, 3 for each turn), below the Session's. A turn event carries
the Session's revision and names the turn's in its payload (`turnRevision`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ._api import api_of, command, real_node


def test_a_sessions_events_never_go_back_in_revision(tmp_path: Path) -> None:
    """Over two turns and a stop, revisions along the Session's journal only grow, and each
    turn event's payload names its turn's revision as turn.show answers it last."""
    with real_node(tmp_path) as node, api_of(node) as api:
        session_id = api.session(api.project(tmp_path / "p"))["sessionId"]
        turns = [api.call("turn.send", {"commandId": command(), "sessionId": session_id,
                                        "text": f"hi {index}", "waitMilliseconds": 4000})["turn"]
                 for index in range(2)]  # fmt: skip
        api.call("session.stop", {"commandId": command(), "sessionId": session_id})
        api.wait_session(session_id, states=["stopped"])
        page = api.call("events.read", {"position": {"kind": "start"}, "limit": 500})
        owned = [e for e in page["events"] if e["ownerId"] == session_id]
        revisions = [e["aggregateRevision"] for e in owned
                     if e.get("aggregateRevision") is not None]  # fmt: skip
        assert revisions == sorted(revisions), [(e["eventType"], e.get("aggregateRevision"))
                                                for e in owned]  # fmt: skip
        session = api.show(session_id)
        assert revisions[-1] == session["revision"]
        last: dict[str, Any] = {}
        for event in owned:
            if event["eventType"].startswith("turn."):
                last[event["payload"]["turnId"]] = event["payload"]["turnRevision"]
        for turn in turns:
            shown = api.call("turn.show", {"turnId": turn["turnId"]})["turn"]
            assert last[turn["turnId"]] == shown["revision"]
