"""Issue 17's first must-show, through a real Node, the CLI and the real Claude Code binary
against the loopback Anthropic mock: two-turn memory, an approval that waits (the Session
reads waiting-approval, status approval, with the prompt) and is allowed with `maia approval
allow` (the file exists) or denied (no file, the turn goes on), an interrupt while an
approval waits (withdrawn; the next turn is usable), a worker killed between turns resuming
the same conversation, per-turn usage equal to the mock's numbers, and a turn past
maxOutputTokensPerActivation failing with its typed reason.

The only network peer is the loopback mock: the Node's environment points the CLI there
and turns off telemetry, update checks and other non-essential traffic."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.maia.cli._node import Cli
from tests.worker_bridge.agents import _anthropic as mock
from tests.worker_bridge.agents._sse_server import SseServer
from tests.worker_bridge.agents._support import claude_env

from ._executors import claude_config, claude_fixtures
from ._node import (
    conversation_id,
    kill_worker,
    node_with,
    run,
    send,
    turn_tokens,
    wait_turn,
    waiting_session,
)

CONFIG = claude_config(swarm={"capacity": {"maxOutputTokensPerActivation": 100}})
TOUCH = {"command": "touch approved.txt", "description": "Create the file"}
DENIED = {"command": "touch denied.txt", "description": "Create another file"}


@contextmanager
def agent_node(base: Path, server: SseServer) -> Iterator[Cli]:
    """A foreground Node whose environment reaches only the Anthropic mock."""
    with node_with(base, CONFIG, claude_env(base, server, home="agent-home")) as cli:
        yield cli


script, cli = claude_fixtures("claude", CONFIG)


def texts_sent(request: Any) -> str:
    return json.dumps(request.body["messages"])


def test_two_turns_share_one_conversation_with_the_mocks_usage(
    cli: Cli, script: mock.AnthropicScript
) -> None:
    """Turn 2's request carries turn 1's prompt and answer; each turn's usage is the mock's."""
    script.add(
        mock.text("Hello there", {"input": 100, "output": 7}),
        mock.text("Second answer", {"input": 30, "output": 4, "cache_read": 5}),
    )
    first = wait_turn(cli, send(cli, "remember the word kumquat"))
    second = wait_turn(cli, send(cli, "which word?"))
    assert first["turn"]["state"] == "completed", first
    assert first["turn"]["outputText"] == "Hello there"
    assert second["turn"]["outputText"] == "Second answer"
    sent = texts_sent(script.main[-1])
    assert "remember the word kumquat" in sent
    assert "Hello there" in sent
    usage = second["turn"]["usage"]
    assert (usage["inputTokens"], usage["outputTokens"], usage["cacheReadTokens"]) == (30, 4, 5)
    assert first["turn"]["usage"]["inputTokens"] == 100
    assert "usage" in [i["kind"] for i in second["items"]]
    totals = run(cli, "session", "show", "agent")["session"]["usage"]
    assert totals["inputTokens"] >= 130
    assert totals["outputTokens"] >= 11


def test_an_approval_waits_and_maia_approval_allow_runs_the_command(
    cli: Cli, script: mock.AnthropicScript
) -> None:
    """The Session reads waiting-approval, status approval, with the prompt; `maia approval
    allow` answers it, the command runs (the file exists) and the turn completes."""
    script.add(
        mock.tool_use("Bash", TOUCH, {"input": 200, "output": 9}),
        mock.text("Created it.", {"input": 300, "output": 11}),
    )
    turn_id = send(cli, "make approved.txt")
    session = waiting_session(cli)
    assert session["status"] == "approval"
    prompt = session["prompt"]
    assert prompt["kind"] == "command"
    assert "touch approved.txt" in prompt["summary"]
    listed = run(cli, "session", "list")["sessions"][0]
    assert listed["prompt"] == {"approvalId": prompt["approvalId"], "kind": "command"}
    pending = run(cli, "approval", "list", "--state", "pending")["approvals"]
    assert [a["approvalId"] for a in pending] == [prompt["approvalId"]]
    allowed = cli("approval", "allow", prompt["approvalId"])
    assert allowed.returncode == 0, allowed.stderr
    shown = wait_turn(cli, turn_id)
    assert shown["turn"]["state"] == "completed", shown
    assert (cli.cwd / "approved.txt").exists()
    assert shown["turn"]["usage"]["inputTokens"] == 500
    assert shown["turn"]["usage"]["outputTokens"] == 20
    kinds = [i["kind"] for i in shown["items"]]
    assert "approval_request" in kinds
    (command,) = [i for i in shown["items"] if i["kind"] == "command"]
    assert command["text"] == "touch approved.txt"
    assert command["data"]["exitCode"] == 0
    approval = run(cli, "approval", "show", prompt["approvalId"])["approval"]
    assert approval["state"] == "allowed"
    again = cli("approval", "deny", prompt["approvalId"], "--json")
    assert again.returncode != 0
    assert json.loads(again.stdout)["error"]["code"] == "approval_not_pending"
    after = run(cli, "session", "show", "agent")["session"]
    assert after["state"] == "idle"  # between turns (its worker warm: activity idle)
    assert "prompt" not in after


def test_a_denied_approval_leaves_no_file_and_the_turn_goes_on(
    cli: Cli, script: mock.AnthropicScript
) -> None:
    """Denied with a message, the command never runs and the model hears the message."""
    script.add(
        mock.tool_use("Bash", DENIED, {"input": 20, "output": 3}),
        mock.text("Understood, I will not.", {"input": 30, "output": 5}),
    )
    turn_id = send(cli, "make denied.txt")
    prompt = waiting_session(cli)["prompt"]
    denied = cli("approval", "deny", prompt["approvalId"], "--message", "no files today")
    assert denied.returncode == 0, denied.stderr
    shown = wait_turn(cli, turn_id)
    assert shown["turn"]["state"] == "completed", shown
    assert shown["turn"]["outputText"] == "Understood, I will not."
    assert not (cli.cwd / "denied.txt").exists()
    assert "no files today" in texts_sent(script.main[-1])


def test_an_interrupt_withdraws_the_approval_and_the_next_turn_works(
    cli: Cli, script: mock.AnthropicScript
) -> None:
    """Interrupted while it waits on an approval: the turn reads interrupted, the approval
    withdrawn (answering it is refused), and the next turn completes in the same
    conversation."""
    script.add(
        mock.tool_use("Bash", DENIED, {"input": 20, "output": 3}),
        mock.text("Back again", {"input": 12, "output": 3}),
    )
    turn_id = send(cli, "make denied.txt again")
    prompt = waiting_session(cli)["prompt"]
    interrupted = cli("turn", "interrupt", turn_id)
    assert interrupted.returncode == 0, interrupted.stderr
    shown = wait_turn(cli, turn_id)
    assert shown["turn"]["state"] == "interrupted", shown
    approval = run(cli, "approval", "show", prompt["approvalId"])["approval"]
    assert approval["state"] == "withdrawn"
    late = cli("approval", "allow", prompt["approvalId"], "--json")
    assert json.loads(late.stdout)["error"]["code"] == "approval_not_pending"
    assert not (cli.cwd / "denied.txt").exists()
    after = wait_turn(cli, send(cli, "are you there?"))
    assert after["turn"]["outputText"] == "Back again"
    assert "make denied.txt again" in texts_sent(script.main[-1])


def test_a_worker_killed_between_turns_resumes_the_same_conversation(
    cli: Cli, script: mock.AnthropicScript
) -> None:
    """SIGKILL the worker: the next turn starts a new worker with the stored conversation id
    (`--resume`), and the mock sees the earlier turns in its request."""
    script.add(mock.text("Resumed reply", {"input": 41, "output": 7}))
    before = conversation_id(cli)
    kill_worker(cli)
    shown = wait_turn(cli, send(cli, "what was the word?"))
    assert shown["turn"]["state"] == "completed", shown
    assert shown["turn"]["outputText"] == "Resumed reply"
    assert conversation_id(cli) == before
    sent = texts_sent(script.main[-1])
    assert "remember the word kumquat" in sent
    assert turn_tokens(shown) == (41, 7)


def test_a_turn_past_the_output_token_limit_fails_and_the_next_one_runs(
    cli: Cli, script: mock.AnthropicScript
) -> None:
    """maxOutputTokensPerActivation 100: a reply the mock reports at 500 output tokens fails
    the turn `output_token_limit_exceeded` with a message naming the limit; the Session
    takes the next turn."""
    script.add(
        mock.text("A very long answer", {"input": 10, "output": 500}),
        mock.text("Short again", {"input": 10, "output": 2}),
    )
    shown = wait_turn(cli, send(cli, "write an essay"))
    assert shown["turn"]["state"] == "failed", shown
    assert shown["turn"]["failureReason"] == "output_token_limit_exceeded"
    assert "maxOutputTokensPerActivation (100" in shown["turn"]["failureMessage"]
    assert shown["turn"]["usage"]["outputTokens"] == 500
    after = wait_turn(cli, send(cli, "something short"))
    assert after["turn"]["outputText"] == "Short again"
