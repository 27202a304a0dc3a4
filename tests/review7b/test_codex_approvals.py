"""Review (s7-review2): Codex approvals through a real Node, the CLI and the real Codex
binary (`codex app-server`, approvalPolicy untrusted) against the loopback OpenAI mock:
the Session's status and prompt while it waits, `approval allow --remember` (docs/agents.md:
acceptForSession), a replayed answer, `sessions.approvalTimeoutMs` expiring one into a told
denial, and the commands' outcome on disk."""

from __future__ import annotations

from tests.maia.agents._executors import codex_config, codex_fixtures
from tests.maia.agents._node import run, send, wait_turn, waiting_session
from tests.maia.cli._node import Cli
from tests.worker_bridge.agents import _openai as mock

TIMEOUT_MS = 8000
CONFIG = codex_config(sessions={"approvalTimeoutMs": TIMEOUT_MS})
USAGE = {"input": 5, "output": 2}


script, cli = codex_fixtures("codex-review", CONFIG)


def test_an_allowed_command_with_its_replay_runs_once(cli: Cli, script: mock.OpenAIScript) -> None:
    """Status approval with a command prompt carrying expiresAt; allowed by commandId, the
    replay is a duplicate, the file exists and the turn completes."""
    script.add(
        mock.function_call("exec_command", {"cmd": "touch allowed.txt"}, USAGE),
        mock.text("Made it.", USAGE),
    )
    turn_id = send(cli, "make allowed.txt")
    session = waiting_session(cli)
    assert (session["status"], session["prompt"]["kind"]) == ("approval", "command")
    assert "expiresAt" in session["prompt"]
    args = ("approval", "respond", session["prompt"]["approvalId"], "--command-id", "c-allow")
    first = run(cli, *args, "--decision", "allow")
    again = run(cli, *args, "--decision", "allow")
    assert (first["delivery"], again["delivery"]) == ("new", "duplicate")
    shown = wait_turn(cli, turn_id)
    assert shown["turn"]["state"] == "completed", shown["turn"]
    assert (cli.cwd / "allowed.txt").exists()


def test_an_unanswered_codex_approval_expires_and_the_command_never_runs(
    cli: Cli, script: mock.OpenAIScript
) -> None:
    """Past approvalTimeoutMs the approval reads expired, the turn goes on and completes,
    and the file does not exist."""
    script.add(
        mock.function_call("exec_command", {"cmd": "touch expired.txt"}, USAGE),
        mock.text("Not done.", USAGE),
    )
    turn_id = send(cli, "make expired.txt")
    approval_id = waiting_session(cli)["prompt"]["approvalId"]
    shown = wait_turn(cli, turn_id)
    assert shown["turn"]["state"] == "completed", shown["turn"]
    assert shown["turn"]["outputText"] == "Not done."
    assert run(cli, "approval", "show", approval_id)["approval"]["state"] == "expired"
    assert not (cli.cwd / "expired.txt").exists()
    session = run(cli, "session", "show", "agent")["session"]
    assert "prompt" not in session
    assert session["status"] == "idle"


def test_allow_remember_does_not_ask_again_for_the_same_command(
    cli: Cli, script: mock.OpenAIScript
) -> None:
    """`approval allow --remember` (acceptForSession): the same command asked for again in
    the next turn runs without a second approval."""
    command = {"cmd": "touch remembered.txt"}
    script.add(
        mock.function_call("exec_command", command, USAGE),
        mock.text("Once.", USAGE),
        mock.function_call("exec_command", command, USAGE),
        mock.text("Twice.", USAGE),
    )
    first = send(cli, "make remembered.txt")
    approval_id = waiting_session(cli)["prompt"]["approvalId"]
    assert cli("approval", "allow", approval_id, "--remember").returncode == 0
    assert wait_turn(cli, first)["turn"]["outputText"] == "Once."
    second = wait_turn(cli, send(cli, "make it again"))
    assert second["turn"]["outputText"] == "Twice.", second["turn"]
    asked = run(cli, "approval", "list", "--session-id", "agent")["approvals"]
    assert [a["approvalId"] for a in asked if a["turnId"] == second["turn"]["turnId"]] == []
