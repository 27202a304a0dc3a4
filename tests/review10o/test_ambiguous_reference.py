"""An ambiguous reference says how many it names, truthfully: reference.resolve lists at
most 10 candidates and says when more match (`moreCandidates`); the CLI's refusal names the
count as a number (`details.count`, `details.more`) and says "more than 10" rather than
"10" when the candidates were cut (a real Node, the real CLI in its own process)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from ._api import api_of, real_node


def _cli(home: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "maia", *argv, "--home", str(home)],
                          capture_output=True, text=True, timeout=120, check=False)  # fmt: skip


def _refusal(home: Path, title: str) -> dict[str, Any]:
    done = _cli(home, "session", "show", title, "--json")
    assert done.returncode == 2, (done.stdout, done.stderr)
    error: dict[str, Any] = json.loads(done.stdout)["error"]
    return error


def test_more_than_ten_matches_are_not_ten(tmp_path: Path) -> None:
    """12 Sessions titled alike: 10 candidates, moreCandidates, the CLI says more than 10;
    2 alike: both, no more, the CLI says 2."""
    with real_node(tmp_path) as node, api_of(node) as api:
        project_id = api.project(tmp_path / "p")
        for _ in range(12):
            api.session(project_id, title="alike")
        for _ in range(2):
            api.session(project_id, title="pair")
        many = api.call("reference.resolve", {"kind": "session", "reference": "alike"})
        assert (many["status"], len(many["candidates"]), many["moreCandidates"]) == (
            "ambiguous", 10, True)  # fmt: skip
        two = api.call("reference.resolve", {"kind": "session", "reference": "pair"})
        assert (len(two["candidates"]), two["moreCandidates"]) == (2, False)
        error = _refusal(node.home, "alike")
        assert (error["details"]["count"], error["details"]["more"]) == (10, True), error
        assert "more than 10 sessions" in error["message"], error
        error = _refusal(node.home, "pair")
        assert (error["details"]["count"], error["details"]["more"]) == (2, False), error
        assert "names 2 sessions" in error["message"], error
