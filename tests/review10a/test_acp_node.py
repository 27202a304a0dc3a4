"""docs/agents.md's ACP executor through a real Node and the CLI: `{"kind": "acp", "argv":
[...]}` in config.jsonc, the test ACP agent (`acp_test_agent.py`, on the agent-client-protocol
package) as the agent. Two turns share one ACP session with the agent's usage; a permission
request is a pending approval that `maia approval allow|deny` answers; an interrupt while
it waits withdraws it; a worker killed between turns resumes the same session."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.maia.agents._node import (
    conversation_id,
    kill_worker,
    node_with,
    run,
    send,
    wait_turn,
    waiting_session,
)
from tests.maia.cli._node import Cli
from tests.worker_bridge.agents._drive import base_env

AGENT = Path(__file__).parents[1] / "worker_bridge" / "agents" / "acp_test_agent.py"
PASSED = ("HOME", "ACP_TEST_STATE")


@pytest.fixture(scope="module")
def cli(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cli]:
    pytest.importorskip("acp")
    base = tmp_path_factory.mktemp("acp")
    executor = {"kind": "acp", "argv": [sys.executable, str(AGENT)], "env": list(PASSED)}
    config = json.dumps({"executors": {"gemini": executor}})
    env = {**base_env(base / "agent-home"), "ACP_TEST_STATE": str(base / "acp-state.json")}
    with node_with(base, config, env) as node:
        created = node("session", "create", "--title", "agent", "--executor", "user:gemini")
        assert created.returncode == 0, created.stderr
        yield node


def test_two_turns_share_one_acp_session_with_its_usage(cli: Cli) -> None:
    """The second prompt is the session's second (#2); the turn's usage is the agent's."""
    first = wait_turn(cli, send(cli, "hello"))
    second = wait_turn(cli, send(cli, "again"))
    assert first["turn"]["outputText"] == "echo #1: hello", first
    assert second["turn"]["outputText"] == "echo #2: again", second
    usage = second["turn"]["usage"]
    assert (usage["inputTokens"], usage["outputTokens"]) == (11, 4), usage
    assert conversation_id(cli).startswith("acp-")


def test_an_allowed_permission_runs_the_command(cli: Cli) -> None:
    """`/permission` waits as an approval of kind command; allowed, the file exists."""
    turn_id = send(cli, "/permission")
    session = waiting_session(cli)
    assert session["status"] == "approval"
    assert session["prompt"]["kind"] == "command"
    assert "touch approved.txt" in session["prompt"]["summary"]
    allowed = cli("approval", "allow", session["prompt"]["approvalId"])
    assert allowed.returncode == 0, allowed.stderr
    shown = wait_turn(cli, turn_id)
    assert shown["turn"]["state"] == "completed", shown
    assert "ran it (allow)" in shown["turn"]["outputText"], shown
    assert (cli.cwd / "approved.txt").exists()
    (cli.cwd / "approved.txt").unlink()


def test_a_denied_permission_does_not_run_and_the_turn_goes_on(cli: Cli) -> None:
    """Denied, the agent reports it did not run the command and the turn completes."""
    turn_id = send(cli, "/permission")
    prompt = waiting_session(cli)["prompt"]
    assert cli("approval", "deny", prompt["approvalId"]).returncode == 0
    shown = wait_turn(cli, turn_id)
    assert shown["turn"]["state"] == "completed", shown
    assert "did not run it" in shown["turn"]["outputText"], shown
    assert not (cli.cwd / "approved.txt").exists()
    approval = run(cli, "approval", "show", prompt["approvalId"])["approval"]
    assert approval["state"] == "denied", approval


def test_an_interrupt_while_waiting_withdraws_the_approval(cli: Cli) -> None:
    """`maia turn interrupt` during the wait: approval withdrawn, turn interrupted, the next
    turn runs in the same ACP session."""
    before = conversation_id(cli)
    turn_id = send(cli, "/permission")
    prompt = waiting_session(cli)["prompt"]
    assert cli("turn", "interrupt", turn_id).returncode == 0
    assert wait_turn(cli, turn_id)["turn"]["state"] == "interrupted"
    approval = run(cli, "approval", "show", prompt["approvalId"])["approval"]
    assert approval["state"] == "withdrawn", approval
    refused = cli("approval", "allow", prompt["approvalId"])
    assert refused.returncode == 1, (refused.stdout, refused.stderr)
    assert "approval_not_pending" in refused.stdout + refused.stderr
    after = wait_turn(cli, send(cli, "still there?"))
    assert after["turn"]["state"] == "completed", after
    assert not (cli.cwd / "approved.txt").exists()
    assert conversation_id(cli) == before


def test_a_worker_killed_between_turns_loads_the_same_session(cli: Cli) -> None:
    """SIGKILL the worker; the next turn's worker `session/load`s the stored session."""
    before = conversation_id(cli)
    kill_worker(cli)
    shown = wait_turn(cli, send(cli, "after the kill"))
    assert shown["turn"]["state"] == "completed", shown
    assert shown["turn"]["outputText"].endswith(": after the kill"), shown
    assert not shown["turn"]["outputText"].startswith("echo #1:"), shown
    assert conversation_id(cli) == before


def test_a_retried_respond_after_the_turn_ended_replays_its_receipt(cli: Cli) -> None:
    """The same commandId once the turn has ended: `duplicate`, the first receipt, no second
    answer; another decision under it conflicts."""
    turn_id = send(cli, "/permission")
    approval_id = waiting_session(cli)["prompt"]["approvalId"]
    args = ("approval", "respond", approval_id, "--command-id", "acp-allow-1")
    first = run(cli, *args, "--decision", "allow")
    assert wait_turn(cli, turn_id)["turn"]["state"] == "completed"
    again = run(cli, *args, "--decision", "allow")
    assert (first["delivery"], again["delivery"]) == ("new", "duplicate"), (first, again)
    assert again["receiptId"] == first["receiptId"], (first, again)
    assert again["approval"]["state"] == "allowed", again
    other = cli(*args, "--decision", "deny", "--json")
    assert other.returncode != 0, other.stdout
    assert "idempotency_conflict" in other.stdout + other.stderr
    (cli.cwd / "approved.txt").unlink()
