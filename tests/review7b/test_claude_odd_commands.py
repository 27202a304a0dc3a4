"""Review (s7-review2): what a model may put in a command reaches the approval, and its
answer, without harm (real Claude Code, a real Node, the CLI, the loopback Anthropic mock):
a command past the approval's 8 KiB summary in multi-byte text is cut to 8 KiB of UTF-8, and
a command holding a lone surrogate escape (valid JSON, not valid UTF-8 text) is asked about
and denied like any other while the Node and the Session go on."""

from __future__ import annotations

import time
from typing import Any

from tests.maia.agents._executors import CLAUDE_PASSED, claude_config, claude_fixtures
from tests.maia.agents._node import run, send, wait_turn, waiting_session
from tests.maia.cli._node import Cli
from tests.worker_bridge.agents import _anthropic as mock

CONFIG = claude_config(CLAUDE_PASSED)


script, cli = claude_fixtures("claude-odd", CONFIG)


def deny_and_finish(cli: Cli, turn_id: str) -> dict[str, object]:
    prompt = waiting_session(cli)["prompt"]
    assert cli("approval", "deny", prompt["approvalId"]).returncode == 0
    shown = wait_turn(cli, turn_id)
    assert shown["turn"]["state"] == "completed", shown["turn"]
    return dict(prompt)


def asked_or_ended(cli: Cli, turn_id: str) -> dict[str, Any]:
    """The turn once the Session waits on an approval or the turn ended (bounded)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        turn: dict[str, Any] = run(cli, "turn", "show", turn_id)["turn"]
        if turn["state"] in ("completed", "failed", "interrupted"):
            return turn
        if run(cli, "session", "show", "agent")["session"]["state"] == "waiting-approval":
            return turn
        time.sleep(0.2)
    raise AssertionError(f"turn {turn_id} neither asked nor ended")


def test_a_long_multibyte_command_is_summarized_within_8_kib(
    cli: Cli, script: mock.AnthropicScript
) -> None:
    """A 12,000-character command of 2-byte letters: the prompt's summary is at most 8 KiB
    of UTF-8 (spec E13), and holds the command's start."""
    command = "touch " + "é" * 12_000
    script.add(
        mock.tool_use("Bash", {"command": command, "description": "x"}, {"input": 1, "output": 1}),
        mock.text("Fine.", {"input": 1, "output": 1}),
    )
    turn_id = send(cli, "make a long file name")
    prompt = deny_and_finish(cli, turn_id)
    summary = str(prompt["summary"])
    assert len(summary.encode("utf-8")) <= 8192
    assert "touch éé" in summary


def test_a_command_with_a_lone_surrogate_is_asked_about(
    cli: Cli, script: mock.AnthropicScript
) -> None:
    """The model's tool input holds "\\ud800" (JSON-valid, not UTF-8): the Session waits on
    the approval like for any other command, and a denial lets the turn complete."""
    script.add(
        mock.tool_use("Bash", {"command": "touch a\ud800b", "description": "x"},
                      {"input": 1, "output": 1}),
        mock.text("Understood.", {"input": 1, "output": 1}),
    )  # fmt: skip
    turn_id = send(cli, "make an odd file")
    turn = asked_or_ended(cli, turn_id)  # a failing worker ends it at once
    if turn["state"] == "failed":
        script.replies.clear()  # the denial's reply was never asked for
    assert turn["state"] != "failed", turn.get("failureMessage")
    prompt = deny_and_finish(cli, turn_id)
    assert "touch a\ufffdb" in str(prompt["summary"]), prompt


def test_after_a_lone_surrogate_command_the_next_turn_runs(
    cli: Cli, script: mock.AnthropicScript
) -> None:
    """Whatever became of the odd command's turn, the Session answers the next turn."""
    script.add(mock.text("Still here", {"input": 1, "output": 1}))
    after = wait_turn(cli, send(cli, "are you there?"))
    script.replies.clear()
    outcome = (after["turn"]["state"], after["turn"].get("failureMessage"))
    assert outcome == ("completed", None)
