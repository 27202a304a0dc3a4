"""`events read --follow` whose Node goes away: exit 6 and, on stderr, where it got to, as
Ctrl-C and --timeout print it (a real Node, stopped under the follow)."""

from __future__ import annotations

import json
from pathlib import Path

from ._node import TIMEOUT_S, reaped, running_node, start_node, stop_node


def test_a_follow_whose_node_goes_says_where_it_got_to(tmp_path: Path) -> None:
    with running_node(tmp_path) as cli:
        created = cli("session", "create", "--title", "followed", "--json")
        assert created.returncode == 0, created.stderr
        process = cli.popen("events", "read", "--follow", "--jsonl", "--timeout", "60s")
        with reaped(process):
            assert process.stdout is not None
            first = json.loads(process.stdout.readline())  # caught up to at least one event
            assert first["journalPosition"] >= 1
            stopped = cli("node", "stop")
            assert stopped.returncode == 0, stopped.stderr
            _, err = process.communicate(timeout=TIMEOUT_S)
        assert process.returncode == 6, err
        marker = "continue with --after "
        assert marker in err, err
        cursor = err.split(marker, 1)[1].split()[0]
        again = start_node(cli.home)
        try:
            resumed = cli("events", "read", "--after", cursor, "--json")
        finally:
            stop_node(again)
    # The Node's own cursor, from before its restart: answered cursor_reset_required with the
    # journal's snapshot (docs/cli.md), not refused as a cursor it never issued.
    assert resumed.returncode == 1, resumed.stderr
    assert json.loads(resumed.stdout)["result"]["status"] == "cursor_reset_required"
