"""`maia approval allow --remember` with the real Codex through a real Node: the rule lasts
for the Session's conversation only (docs/agents.md). Codex 0.163.0 offers no
`acceptForSession` for an exec command, only an exec-policy amendment, which it writes to
`$CODEX_HOME/rules/default.rules`: the command was then allowed for every later Codex run
of that CODEX_HOME, any Session, any directory."""

from __future__ import annotations

import uuid

from tests.maia.agents._executors import codex_config, codex_fixtures
from tests.maia.agents._node import run, send, wait_turn, waiting_session
from tests.maia.cli._node import Cli
from tests.worker_bridge.agents import _openai as mock

USAGE = {"input": 5, "output": 2}
NAME = f"remembered-{uuid.uuid4().hex[:12]}.txt"  # unique: no earlier rule can match it
COMMAND = {"cmd": f"touch {NAME}"}

script, cli = codex_fixtures("codex-remember", codex_config())


def _rules_naming(cli: Cli) -> list[str]:
    codex_home = cli.home.parent / "codex-home"
    return [str(p) for p in codex_home.rglob("*.rules") if NAME in p.read_text(errors="replace")]


def test_remember_holds_for_the_session_only(cli: Cli, script: mock.OpenAIScript) -> None:
    """Remembered in `agent`: its next turn runs the command without asking; no rules file
    names it; Session `other` in the same directory is asked."""
    script.add(
        mock.function_call("exec_command", COMMAND, USAGE), mock.text("Once.", USAGE),
        mock.function_call("exec_command", COMMAND, USAGE), mock.text("Twice.", USAGE),
        mock.function_call("exec_command", COMMAND, USAGE), mock.text("Other.", USAGE),
    )  # fmt: skip
    first = send(cli, "make it")
    prompt = waiting_session(cli)["prompt"]
    assert run(cli, "approval", "allow", prompt["approvalId"], "--remember")["approval"]
    assert wait_turn(cli, first)["turn"]["outputText"] == "Once."
    second = wait_turn(cli, send(cli, "make it again"))
    assert second["turn"]["outputText"] == "Twice.", second["turn"]
    asked = run(cli, "approval", "list", "--session-id", "agent")["approvals"]
    assert [a for a in asked if a["turnId"] == second["turn"]["turnId"]] == []
    assert _rules_naming(cli) == []
    created = cli("session", "create", "--title", "other", "--executor", "user:codex")
    assert created.returncode == 0, created.stderr
    other = send(cli, "make it too", "other")
    again = waiting_session(cli, "other")["prompt"]
    assert NAME in again["summary"]
    assert run(cli, "approval", "deny", again["approvalId"])["approval"]["state"] == "denied"
    assert wait_turn(cli, other)["turn"]["state"] == "completed"
