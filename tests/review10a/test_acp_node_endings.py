"""How an ACP turn ends when nobody answers, the Session stops, the agent dies or the turn
runs too long, through a real Node and the CLI with the test ACP agent (docs/agents.md
"Answering approvals", "When the harness misbehaves"): an approval past
`sessions.approvalTimeoutMs` expires into a told denial (the agent does not run the command,
the turn completes); `session stop` while one waits withdraws it; an agent exiting
mid-prompt fails the turn with its status and the next turn loads the same ACP session in a
new process; a turn past the executor's `wallTimeMs` fails `wall_time_exceeded`."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.maia.agents._node import (
    conversation_id,
    node_with,
    run,
    send,
    wait_turn,
    waiting_session,
)
from tests.maia.cli._node import Cli
from tests.worker_bridge.agents._drive import base_env

AGENT = Path(__file__).parents[1] / "worker_bridge" / "agents" / "acp_test_agent.py"


@pytest.fixture(scope="module")
def cli(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cli]:
    pytest.importorskip("acp")
    base = tmp_path_factory.mktemp("acp-endings")
    executor = {"kind": "acp", "argv": [sys.executable, str(AGENT)],
                "env": ["HOME", "ACP_TEST_STATE"]}  # fmt: skip
    short = {**executor, "wallTimeMs": 1500}
    config = json.dumps({"sessions": {"approvalTimeoutMs": 2000},
                         "executors": {"acp": executor, "acp-short": short}})  # fmt: skip
    env = {**base_env(base / "agent-home"), "ACP_TEST_STATE": str(base / "acp.json")}
    with node_with(base, config, env) as node:
        for title, name in (("agent", "acp"), ("short", "acp-short")):
            created = node("session", "create", "--title", title, "--executor", f"user:{name}")
            assert created.returncode == 0, created.stderr
        yield node


def test_an_unanswered_approval_expires_and_the_agent_does_not_run_it(cli: Cli) -> None:
    """expired; the agent was told no (`reject_once`), the turn completes, no file."""
    turn_id = send(cli, "/permission")
    approval_id = waiting_session(cli)["prompt"]["approvalId"]
    shown = wait_turn(cli, turn_id)
    assert shown["turn"]["state"] == "completed", shown
    assert "did not run it" in shown["turn"]["outputText"], shown
    assert run(cli, "approval", "show", approval_id)["approval"]["state"] == "expired"
    assert not (cli.cwd / "approved.txt").exists()


def test_an_agent_dying_mid_prompt_fails_the_turn_and_the_session_goes_on(cli: Cli) -> None:
    """Exit 3 mid-prompt: failed with the status; the next turn loads the same session."""
    before = conversation_id(cli)
    shown = wait_turn(cli, send(cli, "/crash"))["turn"]
    assert shown["state"] == "failed", shown
    assert "status 3" in json.dumps(shown), shown
    after = wait_turn(cli, send(cli, "still there?"))["turn"]
    assert after["state"] == "completed", after
    assert after["outputText"].endswith(": still there?"), after
    assert conversation_id(cli) == before


def test_a_stop_while_an_approval_waits_withdraws_it(cli: Cli) -> None:
    """`session stop`: withdrawn, the turn interrupted, no file (last: a stopped Session
    takes no more turns)."""
    turn_id = send(cli, "/permission")
    approval_id = waiting_session(cli)["prompt"]["approvalId"]
    stopped = cli("session", "stop", "agent")
    assert stopped.returncode == 0, stopped.stderr
    assert wait_turn(cli, turn_id)["turn"]["state"] == "interrupted"
    assert run(cli, "approval", "show", approval_id)["approval"]["state"] == "withdrawn"
    assert not (cli.cwd / "approved.txt").exists()


def test_a_turn_past_its_wall_time_fails_and_the_session_goes_on(cli: Cli) -> None:
    """`/slow` on an executor with wallTimeMs 1500: failed `wall_time_exceeded`; the next
    turn completes in the same ACP session."""
    shown = wait_turn(cli, send(cli, "/slow", "short"))["turn"]
    assert (shown["state"], shown.get("failureReason")) == ("failed", "wall_time_exceeded"), shown
    after = wait_turn(cli, send(cli, "done?", "short"))["turn"]
    assert after["state"] == "completed", after
    assert after["outputText"] == "echo #2: done?", after
