"""A Node restart while a Claude Code turn waits on an approval: the worker (and the harness
waiting for the answer) died with the Node, so after the restart the approval reads
withdrawn, answering it is refused, the turn reads failed `runtime_lost`, no command ran,
and the next turn resumes the same harness conversation."""

from __future__ import annotations

from pathlib import Path

from tests.worker_bridge.agents import _anthropic as mock
from tests.worker_bridge.agents._drive import need_claude
from tests.worker_bridge.agents._sse_server import serve

from ._node import conversation_id, run, send, wait_turn, waiting_session
from .test_e2e_claude import DENIED, agent_node, texts_sent


def test_a_node_restart_withdraws_the_pending_approval_and_resumes_the_conversation(
    tmp_path: Path,
) -> None:
    """Restarted with an approval pending: withdrawn, turn runtime_lost, conversation kept."""
    need_claude()
    script = mock.AnthropicScript(
        mock.text("Noted", {"input": 10, "output": 2}),
        mock.tool_use("Bash", DENIED, {"input": 20, "output": 3}),
        mock.text("After the restart", {"input": 30, "output": 4}),
    )
    with serve(script) as server:
        with agent_node(tmp_path, server) as cli:
            created = cli("session", "create", "--title", "agent", "--executor", "user:claude")
            assert created.returncode == 0, created.stderr
            assert wait_turn(cli, send(cli, "the colour is teal"))["turn"]["state"] == "completed"
            before = conversation_id(cli)
            waiting = send(cli, "make denied.txt")
            prompt = waiting_session(cli)["prompt"]
        with agent_node(tmp_path, server) as cli:
            approval = run(cli, "approval", "show", prompt["approvalId"])["approval"]
            assert approval["state"] == "withdrawn"
            late = cli("approval", "allow", prompt["approvalId"])
            assert late.returncode != 0
            lost = run(cli, "turn", "show", waiting)["turn"]
            assert (lost["state"], lost["failureReason"]) == ("failed", "runtime_lost")
            assert "prompt" not in run(cli, "session", "show", "agent")["session"]
            after = wait_turn(cli, send(cli, "which colour?"))
            assert after["turn"]["outputText"] == "After the restart"
            assert conversation_id(cli) == before
    assert not (tmp_path / "project" / "denied.txt").exists()
    assert "the colour is teal" in texts_sent(script.main[-1])
