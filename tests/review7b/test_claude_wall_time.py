"""Review (s7-review2): an approval left waiting past the turn's wall time with the real
Claude Code binary through a real Node and the CLI (docs/sessions.md: the limit holds for
every executor; docs/agents.md: `wallTimeMs` is "one turn's limit" for every agent kind, an
approval waits as long as its turn does and is withdrawn, never denied, when nobody can
answer it usefully): the turn fails `wall_time_exceeded`, the approval reads withdrawn, the
command never runs, and the next turn answers."""

from __future__ import annotations

import json
import time
from functools import partial
from pathlib import Path
from typing import Any

from tests.maia.agents._node import agent_session, run, send, wait_turn, waiting_session
from tests.maia.cli._node import Cli
from tests.worker_bridge.agents import _anthropic as mock
from tests.worker_bridge.agents._drive import need_claude
from tests.worker_bridge.agents._support import claude_env

PASSED = ["HOME", "NO_PROXY", "no_proxy", "ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY"]
CLAUDE = {"kind": "claude-code", "permissionMode": "default", "env": PASSED}
LIMIT_MS = 4000
ENDED_WITHIN_S = 40  # the limit, the 10 s interrupt bound and slack for a loaded machine


def script() -> mock.AnthropicScript:
    return mock.AnthropicScript(
        mock.tool_use("Bash", {"command": "touch late.txt", "description": "x"},
                      {"input": 1, "output": 1}),
        *[mock.text("Next answer", {"input": 1, "output": 1}) for _ in "ab"],
    )  # fmt: skip


def ended_turn(cli: Cli, turn_id: str) -> dict[str, Any]:
    """The turn once it left running (or as it is after ENDED_WITHIN_S)."""
    deadline = time.monotonic() + ENDED_WITHIN_S
    turn: dict[str, Any] = run(cli, "turn", "show", turn_id)["turn"]
    while turn["state"] in ("queued", "dispatching", "running") and time.monotonic() < deadline:
        time.sleep(0.5)
        turn = run(cli, "turn", "show", turn_id)["turn"]
    return turn


def check_withdrawn_past_the_limit(tmp_path: Path, config: dict[str, Any]) -> None:
    need_claude()
    replies = script()
    env_for = partial(claude_env, tmp_path, home="agent-home")
    with agent_session(tmp_path, json.dumps(config), env_for, replies, "user:claude") as cli:
        turn_id = send(cli, "make late.txt")
        approval_id = waiting_session(cli)["prompt"]["approvalId"]
        turn = ended_turn(cli, turn_id)
        assert (turn["state"], turn.get("failureReason")) == ("failed", "wall_time_exceeded")
        approval = run(cli, "approval", "show", approval_id)["approval"]
        assert approval["state"] == "withdrawn", approval
        after = wait_turn(cli, send(cli, "still there?"))
        assert after["turn"]["outputText"] == "Next answer", after["turn"]
        assert not (cli.cwd / "late.txt").exists()


def test_the_nodes_wall_time_withdraws_a_waiting_approval(tmp_path: Path) -> None:
    """swarm.capacity.maxWallTimeMsPerActivation 4 s, nobody answers: wall_time_exceeded,
    the approval withdrawn, no file, and the next turn answers."""
    check_withdrawn_past_the_limit(
        tmp_path,
        {
            "swarm": {"capacity": {"maxWallTimeMsPerActivation": LIMIT_MS}},
            "executors": {"claude": CLAUDE},
        },
    )


def test_the_executors_wall_time_withdraws_a_waiting_approval(tmp_path: Path) -> None:
    """executors.claude.wallTimeMs 4 s (docs/agents.md: one turn's limit, for every kind),
    nobody answers: the same outcome as the Node-wide limit."""
    check_withdrawn_past_the_limit(
        tmp_path, {"executors": {"claude": {**CLAUDE, "wallTimeMs": LIMIT_MS}}}
    )
