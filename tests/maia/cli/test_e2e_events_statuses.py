"""`maia events read` with a cursor the Node cannot serve, against real Node processes: a
cursor from before a restart answers cursor_reset_required (exit 1, the reason and the
cursor to start again from), `--follow` says so on stderr and goes on from the oldest
retained event, and a cursor this Node never issued answers invalid_cursor (exit 1)."""

from __future__ import annotations

import json
from pathlib import Path

from ._node import Cli, start_node, stop_node


def test_events_read_reset_and_invalid_cursors(tmp_path: Path) -> None:
    """After a restart the old cursor is reset (its snapshot cursor then reads a page);
    --follow with it prints the journal from its start; a forged cursor is invalid."""
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    cli = Cli(home, project)
    node = start_node(home)
    try:
        assert cli("session", "create", "--title", "before").returncode == 0
        page = cli("events", "read", "--json")
        assert page.returncode == 0, page.stderr
        old = json.loads(page.stdout)["result"]["nextCursor"]
    finally:
        stop_node(node)
    node = start_node(home)
    try:
        reset = cli("events", "read", "--after", old)
        assert reset.returncode == 1, reset.stderr
        assert reset.stdout.startswith("cursor_reset_required: ")
        assert "start again with --after c1." in reset.stdout
        as_json = cli("events", "read", "--after", old, "--json")
        assert as_json.returncode == 1
        result = json.loads(as_json.stdout)["result"]
        assert result["status"] == "cursor_reset_required"
        again = cli("events", "read", "--after", result["snapshot"]["cursor"], "--json")
        assert again.returncode == 0, again.stderr
        types = [e["eventType"] for e in json.loads(again.stdout)["result"]["events"]]
        assert "session.created" in types
        follow = cli("events", "read", "--follow", "--after", old, "--jsonl", "--timeout", "2s")
        assert follow.returncode == 0, follow.stderr
        assert "cursor_reset_required" in follow.stderr
        followed = [json.loads(line)["eventType"] for line in follow.stdout.splitlines()]
        assert "session.created" in followed
        forged = old[:-6] + ("AAAAAA" if not old.endswith("AAAAAA") else "BBBBBB")
        invalid = cli("events", "read", "--after", forged, "--json")
        assert invalid.returncode == 1
        assert json.loads(invalid.stdout)["result"]["status"] == "invalid_cursor"
        as_lines = cli("events", "read", "--after", forged, "--jsonl")  # one line, not none
        assert as_lines.returncode == 1
        assert [json.loads(line)["status"] for line in as_lines.stdout.splitlines()] == [
            "invalid_cursor"]  # fmt: skip
        follow_invalid = cli("events", "read", "--follow", "--after", forged, "--timeout", "2s")
        assert follow_invalid.returncode == 1
        assert "invalid_cursor" in follow_invalid.stderr
    finally:
        stop_node(node)
