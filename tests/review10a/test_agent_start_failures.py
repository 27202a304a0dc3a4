"""docs/agents.md "When the harness misbehaves" through a real Node and the CLI: an agent
binary that is missing, or that exits at start, fails the turn with a reason naming the
harness, the command and the exit status; the Session stays usable (the next turn fails the
same way, nothing wedges)."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from tests.maia.agents._node import node_with, run, send, wait_turn
from tests.maia.cli._node import Cli
from tests.worker_bridge.agents._drive import base_env

MISSING = "/nonexistent/agent-binary"
CRASH = [sys.executable, "-c", "import sys; sys.stderr.write('no licence\\n'); sys.exit(3)"]
EXECUTORS = {
    "claude-missing": {"kind": "claude-code", "command": MISSING, "env": ["HOME"]},
    "codex-missing": {"kind": "codex", "command": MISSING, "env": ["HOME"]},
    "acp-missing": {"kind": "acp", "argv": [MISSING, "--acp"], "env": ["HOME"]},
    "acp-crash": {"kind": "acp", "argv": CRASH, "env": ["HOME"]},
}


@pytest.fixture(scope="module")
def cli(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cli]:
    base = tmp_path_factory.mktemp("start-failures")
    config = json.dumps({"executors": EXECUTORS})
    with node_with(base, config, base_env(base / "agent-home")) as node:
        for name in EXECUTORS:
            created = node("session", "create", "--title", name, "--executor", f"user:{name}")
            assert created.returncode == 0, created.stderr
        yield node


def failed_turn(cli: Cli, session: str) -> dict[str, Any]:
    shown: dict[str, Any] = wait_turn(cli, send(cli, "hello", session))["turn"]
    assert shown["state"] == "failed", shown
    return shown


@pytest.mark.parametrize(
    ("session", "harness"),
    [("claude-missing", "claude-code"), ("codex-missing", "codex"), ("acp-missing", "acp")],
)
def test_a_missing_binary_fails_the_turn_naming_the_command(
    cli: Cli, session: str, harness: str
) -> None:
    """The reason names the harness and the command that was not found; twice in a row."""
    for _ in range(2):
        shown = failed_turn(cli, session)
        reason = json.dumps(shown)
        assert harness in reason, shown
        assert MISSING in reason, shown
        assert "not found" in reason or "No such file" in reason, shown
    assert run(cli, "session", "show", session)["session"]["state"] != "failed"


def test_an_agent_exiting_at_start_fails_the_turn_with_its_status_and_stderr(cli: Cli) -> None:
    """An ACP agent that exits 3 before `initialize` answers: the reason has 3 and stderr."""
    shown = failed_turn(cli, "acp-crash")
    reason = json.dumps(shown)
    assert "status 3" in reason, shown
    assert "no licence" in reason, shown
