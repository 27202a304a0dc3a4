"""docs/agents.md's approval table for Codex through a real Node, the CLI and the real Codex
binary: `maia turn interrupt` while a command approval waits withdraws the approval (Codex is
told `cancel`), the turn reads interrupted, the command never runs, a late answer is refused
`approval_not_pending`, and the next turn runs in the same thread."""

from __future__ import annotations

from tests.maia.agents._executors import codex_config, codex_fixtures
from tests.maia.agents._node import conversation_id, run, send, wait_turn, waiting_session
from tests.maia.cli._node import Cli
from tests.worker_bridge.agents import _openai as mock

USAGE = {"input": 5, "output": 2}

script, cli = codex_fixtures("codex-interrupt", codex_config())


def test_an_interrupt_while_a_codex_approval_waits_withdraws_it(
    cli: Cli, script: mock.OpenAIScript
) -> None:
    """Withdrawn, interrupted, no file, a late allow refused; the thread goes on."""
    script.add(
        mock.function_call("exec_command", {"cmd": "touch never.txt"}, USAGE),
        mock.text("Back.", USAGE),
    )
    turn_id = send(cli, "make never.txt")
    prompt = waiting_session(cli)["prompt"]
    before = conversation_id(cli)
    assert cli("turn", "interrupt", turn_id).returncode == 0
    assert wait_turn(cli, turn_id)["turn"]["state"] == "interrupted"
    assert run(cli, "approval", "show", prompt["approvalId"])["approval"]["state"] == "withdrawn"
    late = cli("approval", "allow", prompt["approvalId"])
    assert late.returncode == 1, (late.stdout, late.stderr)
    assert "approval_not_pending" in late.stdout + late.stderr
    after = wait_turn(cli, send(cli, "are you there?"))
    assert after["turn"]["state"] == "completed", after
    assert after["turn"]["outputText"] == "Back.", after
    assert not (cli.cwd / "never.txt").exists()
    assert conversation_id(cli) == before
