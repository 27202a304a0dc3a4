"""A retried `approval.respond` (same commandId) after a Node restart, through real Nodes and
the test ACP agent: the receipt is durable, so the retry is a `duplicate` with the first
receipt and the approval as answered, and it runs nothing again."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.maia.agents._node import node_with, run, send, wait_turn, waiting_session
from tests.worker_bridge.agents._drive import base_env

AGENT = Path(__file__).parents[1] / "worker_bridge" / "agents" / "acp_test_agent.py"


def test_a_respond_retried_after_a_restart_is_a_duplicate(tmp_path: Path) -> None:
    """Allowed by commandId, Node restarted, the same respond: duplicate, same receipt."""
    executor = {"kind": "acp", "argv": [sys.executable, str(AGENT)],
                "env": ["HOME", "ACP_TEST_STATE"]}  # fmt: skip
    config = json.dumps({"executors": {"acp": executor}})
    env = {**base_env(tmp_path / "agent-home"), "ACP_TEST_STATE": str(tmp_path / "acp.json")}
    with node_with(tmp_path, config, env) as cli:
        created = cli("session", "create", "--title", "agent", "--executor", "user:acp")
        assert created.returncode == 0, created.stderr
        turn_id = send(cli, "/permission")
        approval_id = waiting_session(cli)["prompt"]["approvalId"]
        args = ("approval", "respond", approval_id, "--command-id", "retry-1", "--decision")
        first = run(cli, *args, "allow")
        assert wait_turn(cli, turn_id)["turn"]["state"] == "completed"
        (cli.cwd / "approved.txt").unlink()
    with node_with(tmp_path, config, env) as cli:
        again = run(cli, *args, "allow")
        assert (first["delivery"], again["delivery"]) == ("new", "duplicate"), again
        assert again["receiptId"] == first["receiptId"], (first, again)
        assert again["approval"]["state"] == "allowed", again
        assert not (cli.cwd / "approved.txt").exists()
