"""Review (s7-review2): `sessions.approvalTimeoutMs` with the real Claude Code binary through
a real Node and the CLI (docs/agents.md, spec E13): a pending approval carries expiresAt on
show, list and the Session's prompt; unanswered it reads expired, the agent hears the denial
and the turn goes on; the command never ran and a late answer is refused."""

from __future__ import annotations

import json
from datetime import datetime

from tests.maia.agents._executors import claude_config, claude_fixtures
from tests.maia.agents._node import run, send, wait_turn, waiting_session
from tests.maia.cli._node import Cli
from tests.worker_bridge.agents import _anthropic as mock

TIMEOUT_MS = 8000
CONFIG = claude_config(sessions={"approvalTimeoutMs": TIMEOUT_MS})
TOUCH = {"command": "touch expired.txt", "description": "Create expired.txt"}


script, cli = claude_fixtures("claude-expiry", CONFIG)


def ms(stamp: str) -> int:
    return int(datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp() * 1000)


def test_an_unanswered_approval_expires_into_a_told_denial_and_the_turn_goes_on(
    cli: Cli, script: mock.AnthropicScript
) -> None:
    """expiresAt = createdAt + approvalTimeoutMs on the approval, the Session's prompt and
    the list page's prompt; after it the approval reads expired (approval.expired), the
    model's next request carries the expiry message, the turn completes, no file exists."""
    script.add(
        mock.tool_use("Bash", TOUCH, {"input": 20, "output": 3}),
        mock.text("Fine, I will not.", {"input": 30, "output": 5}),
    )
    turn_id = send(cli, "make expired.txt")
    prompt = waiting_session(cli)["prompt"]
    approval = run(cli, "approval", "show", prompt["approvalId"])["approval"]
    assert ms(approval["expiresAt"]) - ms(approval["createdAt"]) == TIMEOUT_MS, approval
    assert prompt["expiresAt"] == approval["expiresAt"]
    (listed,) = run(cli, "session", "list")["sessions"]
    assert listed["prompt"] == {
        "approvalId": prompt["approvalId"],
        "kind": prompt["kind"],
        "expiresAt": approval["expiresAt"],
    }
    shown = wait_turn(cli, turn_id)
    assert shown["turn"]["state"] == "completed", shown
    assert shown["turn"]["outputText"] == "Fine, I will not."
    after = run(cli, "approval", "show", prompt["approvalId"])["approval"]
    assert after["state"] == "expired", after
    assert "approvalTimeoutMs" in json.dumps(script.main[-1].body["messages"])
    assert not (cli.cwd / "expired.txt").exists()
    late = cli("approval", "allow", prompt["approvalId"], "--json")
    assert late.returncode == 1
    assert json.loads(late.stdout)["error"]["code"] == "approval_not_pending"
    session = run(cli, "session", "show", "agent")["session"]
    assert session["state"] == "idle", session
    assert "prompt" not in session
