"""Review (s7-review2): approvals of the real Claude Code binary through a real Node and the
CLI, against the loopback Anthropic mock: a replayed answer, an answer whose commandId is
reused with another decision, `session wait --activities waiting_approval`, and
`session stop` while an approval waits (docs/agents.md: withdrawn, the turn interrupted)."""

from __future__ import annotations

import json

from tests.maia.agents._executors import claude_config, claude_fixtures
from tests.maia.agents._node import run, send, wait_turn, waiting_session
from tests.maia.cli._node import Cli
from tests.worker_bridge.agents import _anthropic as mock

CONFIG = claude_config()


def touch(name: str) -> dict[str, str]:
    return {"command": f"touch {name}", "description": f"Create {name}"}


script, cli = claude_fixtures("claude-review", CONFIG)


def test_a_replayed_answer_is_a_duplicate_and_another_decision_under_it_conflicts(
    cli: Cli, script: mock.AnthropicScript
) -> None:
    """approval.respond by commandId: the same answer again is `duplicate` (one receipt),
    the same commandId with the other decision is idempotency_conflict, and the command ran
    once."""
    script.add(
        mock.tool_use("Bash", touch("replayed.txt"), {"input": 20, "output": 3}),
        mock.text("Done.", {"input": 30, "output": 5}),
    )
    turn_id = send(cli, "make replayed.txt")
    waited = cli("session", "wait", "agent", "--activity", "waiting_approval", "--json")
    assert waited.returncode == 0, (waited.stdout, waited.stderr)
    waited_session = json.loads(waited.stdout)["result"]["session"]
    assert waited_session["activity"] == "waiting_approval"
    shown = waiting_session(cli)
    assert waited_session["prompt"] == shown["prompt"]  # session.wait = session.show (E13)
    assert shown["prompt"]["summary"]
    approval_id = shown["prompt"]["approvalId"]
    args = ("approval", "respond", approval_id, "--command-id", "answer-1")
    first = run(cli, *args, "--decision", "allow")
    again = run(cli, *args, "--decision", "allow")
    assert (first["delivery"], again["delivery"]) == ("new", "duplicate")
    assert again["receiptId"] == first["receiptId"]
    other = cli(*args, "--decision", "deny", "--json")
    assert other.returncode == 1, other.stdout
    assert json.loads(other.stdout)["error"]["code"] == "idempotency_conflict"
    shown = wait_turn(cli, turn_id)
    assert shown["turn"]["state"] == "completed", shown
    assert (cli.cwd / "replayed.txt").exists()
    receipt = run(cli, "receipt", "get", "--command-id", "answer-1")["receipt"]
    assert receipt["operationId"] == "approval.respond"
    assert receipt["outcome"] == "applied"


def test_a_stop_while_an_approval_waits_withdraws_it_and_the_command_never_runs(
    cli: Cli, script: mock.AnthropicScript
) -> None:
    """`session stop` while the Session waits on an approval: the approval reads withdrawn,
    answering it is refused approval_not_pending, the command never ran, the Session is
    stopped and its status ended without a prompt."""
    script.add(mock.tool_use("Bash", touch("stopped.txt"), {"input": 20, "output": 3}))
    turn_id = send(cli, "make stopped.txt")
    approval_id = waiting_session(cli)["prompt"]["approvalId"]
    stopped = cli("session", "stop", "agent")
    assert stopped.returncode == 0, stopped.stderr
    shown = wait_turn(cli, turn_id)
    # docs/agents.md's table: the stop interrupts the turn first, so it ends interrupted.
    assert shown["turn"]["state"] == "interrupted", shown
    approval = run(cli, "approval", "show", approval_id)["approval"]
    assert approval["state"] == "withdrawn", approval
    late = cli("approval", "allow", approval_id, "--json")
    assert late.returncode == 1
    assert json.loads(late.stdout)["error"]["code"] == "approval_not_pending"
    session = run(cli, "session", "wait", "agent", "--state", "stopped")["session"]
    assert (session["state"], session["status"]) == ("stopped", "ended"), session
    assert "prompt" not in session
    assert not (cli.cwd / "stopped.txt").exists()


def test_a_turn_queued_behind_a_waiting_approval_keeps_the_activity_waiting_approval(
    cli: Cli, script: mock.AnthropicScript
) -> None:
    """While an approval waits, queueing another turn leaves the Session's activity
    waiting_approval (with state waiting-approval and status approval)."""
    script.add(
        mock.tool_use("Bash", touch("behind.txt"), {"input": 20, "output": 3}),
        mock.text("Not now.", {"input": 30, "output": 5}),
        mock.text("Queued answer", {"input": 30, "output": 5}),
    )
    made = cli("session", "create", "--title", "behind", "--executor", "user:claude")
    assert made.returncode == 0, made.stderr
    turn_id = send(cli, "make behind.txt", "behind")
    approval_id = waiting_session(cli, "behind")["prompt"]["approvalId"]
    queued = send(cli, "and then this", "behind")
    shown = run(cli, "session", "show", "behind")["session"]
    observed = (shown["state"], shown["status"], shown["activity"])
    assert cli("approval", "deny", approval_id).returncode == 0
    assert wait_turn(cli, turn_id)["turn"]["state"] == "completed"
    assert wait_turn(cli, queued)["turn"]["outputText"] == "Queued answer"
    assert observed == ("waiting-approval", "approval", "waiting_approval")
