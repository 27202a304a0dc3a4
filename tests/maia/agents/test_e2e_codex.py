"""Issue 17's Codex must-show through a real Node, the CLI and the real Codex binary
(`codex app-server`) against the loopback OpenAI Responses mock: two-turn memory with the
mock's per-turn usage, an `exec_command` that waits for approval and is allowed (the file
exists) or denied (no file, the turn goes on), an interrupt mid-turn, and a worker killed
between turns resuming the same thread. The only network peer is the loopback mock."""

from __future__ import annotations

import json
import time
from typing import Any

from tests.maia.cli._node import Cli
from tests.worker_bridge.agents import _openai as mock

from ._executors import codex_config, codex_fixtures
from ._node import (
    WAIT_S,
    conversation_id,
    kill_worker,
    send,
    turn_tokens,
    wait_turn,
    waiting_session,
)

CONFIG = codex_config()


script, cli = codex_fixtures("codex", CONFIG)


def sent(request: Any) -> str:
    return json.dumps(request.body["input"])


def test_two_turns_share_one_thread_with_the_mocks_usage(
    cli: Cli, script: mock.OpenAIScript
) -> None:
    """Turn 2's request carries turn 1's prompt and answer; each turn's usage is the mock's."""
    script.add(
        mock.text("Hello there", {"input": 100, "output": 7}),
        mock.text("Second answer", {"input": 130, "output": 4, "cached": 90}),
    )
    first = wait_turn(cli, send(cli, "remember the word kumquat"))
    second = wait_turn(cli, send(cli, "which word?"))
    assert first["turn"]["outputText"] == "Hello there", first
    assert second["turn"]["outputText"] == "Second answer", second
    assert "remember the word kumquat" in sent(script.main[-1])
    assert "Hello there" in sent(script.main[-1])
    usage = second["turn"]["usage"]
    assert (usage["inputTokens"], usage["outputTokens"], usage["cacheReadTokens"]) == (130, 4, 90)


def test_an_allowed_command_runs_after_maia_approval_allow(
    cli: Cli, script: mock.OpenAIScript
) -> None:
    """The Session waits (status approval, prompt of kind command); allowed, the file exists."""
    script.add(
        mock.function_call("exec_command", {"cmd": "touch approved.txt"}, {"input": 200,
                                                                           "output": 9}),
        mock.text("Created it.", {"input": 300, "output": 11}),
    )  # fmt: skip
    turn_id = send(cli, "make approved.txt")
    session = waiting_session(cli)
    assert session["status"] == "approval"
    assert session["prompt"]["kind"] == "command"
    assert "touch approved.txt" in session["prompt"]["summary"]
    allowed = cli("approval", "allow", session["prompt"]["approvalId"])
    assert allowed.returncode == 0, allowed.stderr
    shown = wait_turn(cli, turn_id)
    assert shown["turn"]["state"] == "completed", shown
    assert (cli.cwd / "approved.txt").exists()
    assert turn_tokens(shown) == (500, 20)


def test_a_denied_command_leaves_no_file_and_the_turn_goes_on(
    cli: Cli, script: mock.OpenAIScript
) -> None:
    """Denied with `maia approval deny`, the command never runs and the turn completes."""
    script.add(
        mock.function_call("exec_command", {"cmd": "touch denied.txt"}, {"input": 20,
                                                                         "output": 3}),
        mock.text("Understood.", {"input": 30, "output": 5}),
    )  # fmt: skip
    turn_id = send(cli, "make denied.txt")
    prompt = waiting_session(cli)["prompt"]
    assert cli("approval", "deny", prompt["approvalId"]).returncode == 0
    shown = wait_turn(cli, turn_id)
    assert shown["turn"]["state"] == "completed", shown
    assert shown["turn"]["outputText"] == "Understood."
    assert not (cli.cwd / "denied.txt").exists()


def test_an_interrupt_mid_turn_leaves_the_thread_usable(
    cli: Cli, script: mock.OpenAIScript
) -> None:
    """`maia turn interrupt` while the mock holds its stream: the turn reads interrupted and
    the next turn completes in the same thread."""
    back = mock.text("Back again", {"input": 12, "output": 3})
    script.add(mock.hanging("Counting: one, two"), back)
    asked = len(script.main)
    turn_id = send(cli, "count to a million")
    deadline = time.monotonic() + WAIT_S
    while len(script.main) == asked:  # the model was asked: the turn runs
        assert time.monotonic() < deadline, "the mock was never asked"
        time.sleep(0.1)
    assert cli("turn", "interrupt", turn_id).returncode == 0
    assert wait_turn(cli, turn_id)["turn"]["state"] == "interrupted"
    after = wait_turn(cli, send(cli, "stop counting"))
    assert after["turn"]["outputText"] == "Back again"
    assert "count to a million" in sent(script.main[-1])


def test_a_worker_killed_between_turns_resumes_the_same_thread(
    cli: Cli, script: mock.OpenAIScript
) -> None:
    """SIGKILL the worker; the next turn resumes the stored thread (`thread/resume`)."""
    script.add(mock.text("Resumed reply", {"input": 41, "output": 7}))
    before = conversation_id(cli)
    kill_worker(cli)
    shown = wait_turn(cli, send(cli, "what was the word?"))
    assert shown["turn"]["outputText"] == "Resumed reply", shown
    assert conversation_id(cli) == before
    assert "remember the word kumquat" in sent(script.main[-1])
