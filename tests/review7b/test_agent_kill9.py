"""Review (s7-review2): kill -9 of a real Node while a real agent (Claude Code, Codex) waits
on an approval with another turn queued behind it (docs/agents.md, docs/sessions.md "When
the Node restarts"): the worker and the harness do not outlive the Node, and after the
restart the approval reads withdrawn, the waiting turn failed `runtime_lost`, the command
never ran, the queued turn runs exactly once in the same conversation, and each send's
receipt names its turn. The only network peer is the loopback mock."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.maia.agents._node import conversation_id, run, send, wait_turn, waiting_session
from tests.worker_bridge.agents import _anthropic as anthropic
from tests.worker_bridge.agents import _openai as openai
from tests.worker_bridge.agents._drive import need_claude, need_codex
from tests.worker_bridge.agents._sse_server import serve
from tests.worker_bridge.agents._support import claude_env, codex_env

from ._killable import kill_9, killable_node, wait_until_gone

CLAUDE = {
    "kind": "claude-code",
    "permissionMode": "default",
    "env": ["HOME", "NO_PROXY", "no_proxy", "ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY"],
}
CODEX = {
    "kind": "codex",
    "approvalPolicy": "untrusted",
    "env": ["HOME", "NO_PROXY", "no_proxy", "CODEX_HOME", "MOCK_API_KEY"],
}


def claude_script() -> anthropic.AnthropicScript:
    return anthropic.AnthropicScript(
        anthropic.text("Noted", {"input": 10, "output": 2}),
        anthropic.tool_use("Bash", {"command": "touch killed.txt", "description": "x"},
                           {"input": 20, "output": 3}),
        *[anthropic.text("After the restart", {"input": 30, "output": 4}) for _ in "ab"],
    )  # fmt: skip


def codex_script() -> openai.OpenAIScript:
    return openai.OpenAIScript(
        openai.text("Noted", {"input": 10, "output": 2}),
        openai.function_call("exec_command", {"cmd": "touch killed.txt"},
                             {"input": 20, "output": 3}),
        *[openai.text("After the restart", {"input": 30, "output": 4}) for _ in "ab"],
    )  # fmt: skip


HARNESSES: dict[str, tuple[Callable[[], Any], dict[str, Any], Any, Any]] = {
    "claude": (claude_script, CLAUDE, claude_env, need_claude),
    "codex": (codex_script, CODEX, codex_env, need_codex),
}


@pytest.mark.parametrize("harness", sorted(HARNESSES))
def test_kill_9_while_an_approval_waits_loses_nothing_and_runs_nothing_twice(
    tmp_path: Path, harness: str
) -> None:
    """Approval pending and a turn queued, the Node SIGKILLed: no worker or harness process
    (found by their private HOME) is left; restarted, the approval is withdrawn, the turn
    runtime_lost, the command never ran, the queued turn completes once in the same
    conversation, and receipt.get of each send names its turn."""
    make_script, executor, env_of, need = HARNESSES[harness]
    need()
    script = make_script()
    config = json.dumps({"executors": {"agent": executor}})
    with serve(script) as server:
        env = env_of(tmp_path, server, home="agent-home")
        marker = str(tmp_path / "agent-home")
        with killable_node(tmp_path, config, env) as (cli, node):
            created = cli("session", "create", "--title", "agent", "--executor", "user:agent")
            assert created.returncode == 0, created.stderr
            assert wait_turn(cli, send(cli, "the colour is teal"))["turn"]["state"] == "completed"
            before = conversation_id(cli)
            waiting = run(cli, "turn", "send", "agent", "make killed.txt", "--command-id", "w")
            prompt = waiting_session(cli)["prompt"]
            queued = run(cli, "turn", "send", "agent", "which colour?", "--command-id", "q")
            assert queued["turn"]["state"] == "queued"
            kill_9(node)
        assert wait_until_gone(marker) == [], "a worker or harness outlived the Node"
        with killable_node(tmp_path, config, env) as (cli, _node):
            approval = run(cli, "approval", "show", prompt["approvalId"])["approval"]
            assert approval["state"] == "withdrawn", approval
            lost = run(cli, "turn", "show", waiting["turn"]["turnId"])["turn"]
            assert (lost["state"], lost["failureReason"]) == ("failed", "runtime_lost"), lost
            after = wait_turn(cli, queued["turn"]["turnId"])
            assert after["turn"]["outputText"] == "After the restart", after["turn"]
            assert conversation_id(cli) == before
            # The queued turn asked the model once. (A spare reply: the killed Node's harness
            # may still ask once after its worker closed its stdin, see the review's report.)
            asked = [r for r in script.main if "which colour?" in json.dumps(r.body)]
            assert len(asked) == 1, len(asked)
            for key, turn in (("w", waiting), ("q", queued)):
                receipt = run(cli, "receipt", "get", "--command-id", key)["receipt"]
                assert receipt["operationId"] == "turn.send"
                assert [t["targetId"] for t in receipt["targets"]] == [turn["turn"]["turnId"]]
            session = run(cli, "session", "show", "agent")["session"]
            assert "prompt" not in session
            assert session["status"] != "approval"
    assert not (tmp_path / "project" / "killed.txt").exists()
    assert "the colour is teal" in json.dumps(script.main[-1].body)
