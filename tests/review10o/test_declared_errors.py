"""Every error an op answers over the API is one its registry entry declares: a list cursor
from an earlier Node run answers `cursor_reset_required` (session.list, receipt.list,
project.list, turn.list, turn.show), and a connection past its in-flight cap answers
`overloaded` whatever the op (a common error)."""

from __future__ import annotations

from pathlib import Path

from maia.node import MAX_IN_FLIGHT
from maia.protocol import COMMON_ERRORS, REGISTRY

from ._api import api_of, command, real_node


def test_a_cursor_from_an_earlier_run_is_a_declared_reset(tmp_path: Path) -> None:
    """After a restart each list's cursor answers cursor_reset_required, declared by the op."""
    with real_node(tmp_path) as node:
        with api_of(node) as api:
            project_id = api.project(tmp_path / "p")
            api.project(tmp_path / "q")
            first = api.session(project_id)["sessionId"]
            api.session(project_id)
            for index in range(2):
                api.call("turn.send", {"commandId": command(), "sessionId": first,
                                       "text": f"hello {index}"})  # fmt: skip
            cursors = {
                "session.list": ({}, api.call("session.list", {"limit": 1})["nextCursor"]),
                "receipt.list": ({}, api.call("receipt.list", {"limit": 1})["nextCursor"]),
                "project.list": ({}, api.call("project.list", {"limit": 1})["nextCursor"]),
                "turn.list": (
                    {"sessionId": first},
                    api.call("turn.list", {"sessionId": first, "limit": 1})["nextCursor"],
                ),
            }
        assert all(cursor for _, cursor in cursors.values()), cursors
        node.stop()
        node.start()
        with api_of(node) as api:
            for method, (body, cursor) in cursors.items():
                error = api.error(method, {**body, "cursor": cursor})
                assert error["code"] == "cursor_reset_required", (method, error)


def test_overloaded_is_common_to_every_op() -> None:
    """The in-flight cap applies to any request on the connection, so every op declares it."""
    assert MAX_IN_FLIGHT > 0
    assert "overloaded" in COMMON_ERRORS
    assert all("overloaded" in op.errors for op in REGISTRY)
