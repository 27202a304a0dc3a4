"""The console's approval parts: a pending approval printed above the prompt with the two
commands that answer it, and the toolbar's count of pending approvals."""

from __future__ import annotations

from maia.console import FeedEvent, SessionCache
from maia.console._render import render_event
from maia.console._status import NodeState

SID = "session_" + "2" * 32
AID = "approval_" + "3" * 32


def test_a_pending_approval_is_printed_with_its_summary_and_answers() -> None:
    """The line names the Session's title, what the agent asks, and allow/deny commands."""
    cache = SessionCache()
    cache.seed([{"sessionId": SID, "title": "agent", "state": "waiting-approval"}])
    event = FeedEvent.from_journal({
        "eventType": "approval.requested", "sessionId": SID,
        "occurredAt": "2026-12-01T10:11:12.000Z",
        "payload": {"approvalId": AID, "kind": "command", "summary": "Bash: touch approved.txt"},
    })  # fmt: skip
    line = render_event(event, cache)
    assert line is not None
    first, second = line.split("\n")
    assert first == f'[10:11:12] approval waiting {SID} "agent": Bash: touch approved.txt'
    assert second.split() == ["maia", "approval", "allow", AID, "|", "maia", "approval", "deny",
                              AID]  # fmt: skip


def test_the_toolbar_counts_pending_approvals_only_when_there_are_some() -> None:
    """Two pending approvals read first in the toolbar; none leaves the toolbar as before."""
    status = {"nodeId": "node_1", "sessionsByState": {"running": 1}, "queuedTurns": 0}
    assert NodeState.from_status(status, 2).toolbar().startswith(" approvals 2 pending · ")
    assert "approvals" not in NodeState.from_status(status).toolbar()
