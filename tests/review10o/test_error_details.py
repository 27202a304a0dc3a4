"""Refusals name what they refuse, over the API as on the CLI: `resource_not_found` names
the input field that held the missing ID (`details.path`, and the message starts with it),
and `invalid_state` names the resource, its ID, the state it is in and the event (the
operation) it refused (`details.resource`, `id`, `state`, `event`), as the error table's
shape `{resource} {id} is {state}` and the transition tables' refusals say."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ._api import api_of, command, real_node

S = "session_00000000000000000000000000000000"
T = "turn_00000000000000000000000000000000"
A = "approval_00000000000000000000000000000000"
P = "project_00000000000000000000000000000000"
R = "routine_00000000000000000000000000000000"
H = "hook_00000000000000000000000000000000"
E = "event_00000000000000000000000000000000"

MISSING: list[tuple[str, dict[str, Any], str]] = [
    ("session.show", {"sessionId": S}, "sessionId"),
    ("session.wait", {"sessionId": S, "states": ["idle"]}, "sessionId"),
    ("session.stop", {"sessionId": S}, "sessionId"),
    ("session.archive", {"sessionId": S}, "sessionId"),
    ("session.rename", {"sessionId": S, "title": "x"}, "sessionId"),
    ("session.create", {"projectId": P}, "projectId"),
    ("turn.send", {"sessionId": S, "text": "x"}, "sessionId"),
    ("turn.show", {"turnId": T}, "turnId"),
    ("turn.wait", {"turnId": T}, "turnId"),
    ("turn.list", {"sessionId": S}, "sessionId"),
    ("turn.queue.list", {"sessionId": S}, "sessionId"),
    ("turn.cancel", {"turnId": T, "expectedRevision": 1}, "turnId"),
    ("turn.interrupt", {"turnId": T}, "turnId"),
    ("approval.show", {"approvalId": A}, "approvalId"),
    ("approval.respond", {"approvalId": A, "decision": "allow"}, "approvalId"),
    ("project.show", {"projectId": P}, "projectId"),
    ("config.show", {"projectId": P}, "projectId"),
    ("receipt.get", {"commandId": "never-used"}, "commandId"),
    ("routine.show", {"routineId": R}, "routineId"),
    ("routine.pause", {"routineId": R, "expectedRevision": 1}, "routineId"),
    ("webhooks.show", {"webhookId": H}, "webhookId"),
    ("reference.resolve", {"kind": "session", "reference": "zzzzzz"}, "reference"),
    ("events.read", {"position": {"kind": "event", "eventId": E}}, "position.eventId"),
]
MUTATIONS = {"session.stop", "session.archive", "session.rename", "session.create", "turn.send",
             "turn.cancel", "turn.interrupt", "approval.respond", "routine.pause"}  # fmt: skip


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Any:
    with real_node(tmp_path_factory.mktemp("details")) as running:
        yield running


@pytest.mark.parametrize(("method", "params", "path"), MISSING, ids=[m for m, _, _ in MISSING])
def test_resource_not_found_names_its_field(
    node: Any, method: str, params: dict[str, Any], path: str
) -> None:
    """The error names the field (details.path) and starts its message with it."""
    body = {"commandId": command(), **params} if method in MUTATIONS else params
    with api_of(node) as api:
        error = api.error(method, body)
    assert error["code"] == "resource_not_found"
    assert error["details"].get("path") == path, error
    assert error["message"].startswith(f"{path}: "), error


def _state_refusal(error: dict[str, Any], resource: str, state: str, event: str) -> None:
    assert error["code"] == "invalid_state", error
    details = error["details"]
    assert (details.get("resource"), details.get("state"), details.get("event")) == (
        resource, state, event), details  # fmt: skip
    assert isinstance(details.get("id"), str), details
    assert details["id"], details


def test_invalid_state_names_resource_id_state_and_event(tmp_path: Path) -> None:
    """A send to a stopped Session, an archive of a running one, a stop of a stopped one,
    an interrupt of a completed turn and a second project.add of a root: each
    `invalid_state` names resource, ID, state and event."""
    with real_node(tmp_path) as running, api_of(running) as api:
        project_id = api.project(tmp_path / "p")
        stopped = api.session(project_id)["sessionId"]
        done = api.call("turn.send", {"commandId": command(), "sessionId": stopped,
                                      "text": "hi", "waitMilliseconds": 4000})["turn"]  # fmt: skip
        api.call("session.stop", {"commandId": command(), "sessionId": stopped})
        api.wait_session(stopped, states=["stopped"])
        error = api.error("turn.send", {"commandId": command(), "sessionId": stopped, "text": "x"})
        _state_refusal(error, "session", "stopped", "turn.send")
        error = api.error("session.stop", {"commandId": command(), "sessionId": stopped})
        _state_refusal(error, "session", "stopped", "session.stop")
        error = api.error("turn.interrupt", {"commandId": command(), "turnId": done["turnId"]})
        _state_refusal(error, "turn", "completed", "turn.interrupt")
        busy = api.session(project_id)["sessionId"]
        api.call("turn.send", {"commandId": command(), "sessionId": busy,
                               "text": "/sleep 60000 busy"})  # fmt: skip
        api.wait_session(busy, states=["running"])
        error = api.error("session.archive", {"commandId": command(), "sessionId": busy})
        _state_refusal(error, "session", "running", "session.archive")
        error = api.error("project.add", {"commandId": command(), "rootPath": str(tmp_path / "p")})
        _state_refusal(error, "project", "added", "project.add")
