"""`maia approval allow --remember` with the real Claude Code through a real Node: the rule
lasts for the Session's conversation only (docs/agents.md). It was Claude's own suggestion
verbatim, whose destination `localSettings` made the CLI write the allow rule into a
`.claude/settings.local.json` of the directory tree (found in /tmp/.claude, where it
allowed the command for every later Claude Code run below /tmp): a second Session in the
same directory ran the command without asking."""

from __future__ import annotations

import uuid
from pathlib import Path

from tests.maia.agents._executors import claude_config, claude_fixtures
from tests.maia.agents._node import run, send, wait_turn, waiting_session
from tests.maia.cli._node import Cli
from tests.worker_bridge.agents import _anthropic as mock

USAGE = {"input": 5, "output": 2}
NAME = f"remembered-{uuid.uuid4().hex[:12]}.txt"  # unique: no earlier rule can match it
COMMAND = {"command": f"touch {NAME}", "description": "Create the file"}

script, cli = claude_fixtures("claude-remember", claude_config())


def _settings_mentioning(root: Path) -> list[Path]:
    """Claude settings files below `root`, or in its ancestors' `.claude`, naming NAME."""
    places = [*root.rglob("settings*.json")]
    places += [p for d in [root, *root.parents] for p in (d / ".claude").glob("settings*.json")]
    return [p for p in places if NAME in p.read_text(errors="replace")]


def test_remember_holds_for_the_session_only(cli: Cli, script: mock.AnthropicScript) -> None:
    """Remembered in `agent`: its next turn runs the command without asking; Session
    `other` in the same directory is asked; no settings file holds the rule."""
    script.add(
        mock.tool_use("Bash", COMMAND, USAGE), mock.text("Once.", USAGE),
        mock.tool_use("Bash", COMMAND, USAGE), mock.text("Twice.", USAGE),
        mock.tool_use("Bash", COMMAND, USAGE), mock.text("Other.", USAGE),
    )  # fmt: skip
    first = send(cli, "make it")
    prompt = waiting_session(cli)["prompt"]
    assert run(cli, "approval", "allow", prompt["approvalId"], "--remember")["approval"]
    assert wait_turn(cli, first)["turn"]["state"] == "completed"
    again = wait_turn(cli, send(cli, "make it again"))
    assert again["turn"]["outputText"] == "Twice.", again  # remembered: not asked
    assert _settings_mentioning(cli.cwd) == []
    created = cli("session", "create", "--title", "other", "--executor", "user:claude")
    assert created.returncode == 0, created.stderr
    other = send(cli, "make it too", "other")
    asked = waiting_session(cli, "other")["prompt"]
    assert NAME in asked["summary"]
    assert run(cli, "approval", "deny", asked["approvalId"])["approval"]["state"] == "denied"
    assert wait_turn(cli, other)["turn"]["state"] == "completed"
