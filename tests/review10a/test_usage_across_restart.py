"""docs/agents.md "Usage and cost" across a Node restart, through real Nodes and the real
binaries against their loopback mocks: the harnesses report running totals for the whole
conversation, so the turn after a restart (a new worker, no previous figure, the conversation
resumed) must still carry only its own tokens, and the Session's totals add up the turns."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from tests.maia.agents._executors import (
    CLAUDE_SANDBOX_PASSED,
    CODEX_PASSED,
    claude_config,
    codex_config,
)
from tests.maia.agents._node import conversation_id, node_with, run, send, turn_tokens, wait_turn
from tests.maia.cli._node import Cli
from tests.worker_bridge.agents import _anthropic as anthropic
from tests.worker_bridge.agents import _openai as openai
from tests.worker_bridge.agents._drive import base_env, need_claude, need_codex
from tests.worker_bridge.agents._sse_server import serve
from tests.worker_bridge.agents._support import claude_env, codex_env

ACP_AGENT = Path(__file__).parents[1] / "worker_bridge" / "agents" / "acp_test_agent.py"


def _create(cli: Cli, executor: str) -> None:
    created = cli("session", "create", "--title", "agent", "--executor", executor)
    assert created.returncode == 0, created.stderr


def _session_usage(cli: Cli) -> dict[str, Any]:
    usage: dict[str, Any] = run(cli, "session", "show", "agent")["session"]["usage"]
    return usage


def _two_turns_with_a_restart(
    base: Path, config: str, env: dict[str, str], executor: str
) -> tuple[tuple[int, int], tuple[int, int], dict[str, Any]]:
    """Turn 1, Node restart, turn 2: each turn's tokens and the Session's usage."""
    with node_with(base, config, env) as cli:
        _create(cli, executor)
        first = wait_turn(cli, send(cli, "remember kumquat"))
        assert first["turn"]["state"] == "completed", first
        before = conversation_id(cli)
    with node_with(base, config, env) as cli:
        second = wait_turn(cli, send(cli, "which word?"))
        assert second["turn"]["state"] == "completed", second
        assert conversation_id(cli) == before
        return turn_tokens(first), turn_tokens(second), _session_usage(cli)


def test_claude_usage_after_a_node_restart_is_the_turns_own(tmp_path: Path) -> None:
    """Claude Code resumed with --resume after the restart: turn 2's tokens are the mock's."""
    need_claude()
    script = anthropic.AnthropicScript(
        anthropic.text("Noted", {"input": 100, "output": 7}),
        anthropic.text("kumquat", {"input": 130, "output": 4}),
    )
    with serve(script) as server:
        env = claude_env(tmp_path, server, home="agent-home")
        config = claude_config(CLAUDE_SANDBOX_PASSED)
        first, second, total = _two_turns_with_a_restart(tmp_path, config, env, "user:claude")
    assert (first, second) == ((100, 7), (130, 4))
    assert (total["inputTokens"], total["outputTokens"], total["turns"]) == (230, 11, 2), total


def test_codex_usage_after_a_node_restart_is_the_turns_own(tmp_path: Path) -> None:
    """Codex resumed with thread/resume after the restart: turn 2's tokens are the mock's."""
    need_codex()
    script = openai.OpenAIScript(
        openai.text("Noted", {"input": 100, "output": 7}),
        openai.text("kumquat", {"input": 130, "output": 4}),
    )
    with serve(script) as server:
        env = codex_env(tmp_path, server, home="agent-home")
        assert set(CODEX_PASSED) >= {"CODEX_HOME"}
        first, second, total = _two_turns_with_a_restart(
            tmp_path, codex_config(), env, "user:codex"
        )
    assert (first, second) == ((100, 7), (130, 4))
    assert (total["inputTokens"], total["outputTokens"], total["turns"]) == (230, 11, 2), total


def test_acp_usage_after_a_node_restart_is_the_turns_own(tmp_path: Path) -> None:
    """The ACP agent's session/load after the restart: each turn has the agent's (11, 4)."""
    executor = {"kind": "acp", "argv": [sys.executable, str(ACP_AGENT)],
                "env": ["HOME", "ACP_TEST_STATE"]}  # fmt: skip
    config = json.dumps({"executors": {"gemini": executor}})
    env = {**base_env(tmp_path / "agent-home"), "ACP_TEST_STATE": str(tmp_path / "acp.json")}
    first, second, total = _two_turns_with_a_restart(tmp_path, config, env, "user:gemini")
    assert (first, second) == ((11, 4), (11, 4))
    assert (total["inputTokens"], total["outputTokens"], total["turns"]) == (22, 8, 2), total
