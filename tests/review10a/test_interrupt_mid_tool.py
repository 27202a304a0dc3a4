"""Interrupting an agent turn while its tool runs, through a real Node, the CLI and the real
Claude Code and Codex binaries: the model asks for a long shell command that needs no
approval (bypassPermissions / approvalPolicy never), and `maia turn interrupt` while it
runs ends the turn interrupted, the command is gone (no orphan; the file it would write
never appears), and the next turn answers in the same conversation."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from tests.maia.agents._executors import claude_config, claude_session, codex_config, codex_session
from tests.maia.agents._node import WAIT_S, conversation_id, send, wait_turn
from tests.maia.cli._node import Cli
from tests.worker_bridge.agents import _anthropic as anthropic
from tests.worker_bridge.agents import _openai as openai

USAGE = {"input": 5, "output": 2}
GRACE_S = 20  # the Node's interrupt grace is 10 s; a worker's idle release comes at 60 s


def _running(marker: str) -> list[int]:
    """Pids whose command line holds `marker`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if marker.encode() in cmdline and b"pytest" not in cmdline:
            found.append(int(entry.name))
    return found


def _wait(condition: Any, what: str, within_s: float = WAIT_S) -> None:
    deadline = time.monotonic() + within_s
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.1)


def _interrupt_mid_tool(cli: Cli, marker: str, late: Path) -> None:
    turn_id = send(cli, "run the long command")
    _wait(lambda: _running(marker), "the command never started")
    before = conversation_id(cli)  # stored at the turn's start
    assert cli("turn", "interrupt", turn_id).returncode == 0
    assert wait_turn(cli, turn_id)["turn"]["state"] == "interrupted"
    # Gone within the Node's interrupt grace (10 s), with room: not at the idle release.
    gone = lambda: not _running(marker)  # noqa: E731
    _wait(gone, f"the command outlived the interrupt: {_running(marker)}", GRACE_S)
    after = wait_turn(cli, send(cli, "are you there?"))
    assert after["turn"]["state"] == "completed", after
    assert after["turn"]["outputText"] == "Back.", after
    assert not late.exists()
    assert conversation_id(cli) == before


def test_claude_interrupted_mid_bash_kills_the_command(tmp_path: Path) -> None:
    """Claude Code running a 317 s Python sleep for Bash (it refuses a plain `sleep N && …`):
    interrupted, the command is gone."""
    long = "python3 -c 'import time; time.sleep(317)' && touch late.txt"
    command = {"command": long, "description": "wait"}
    script = anthropic.AnthropicScript(
        anthropic.tool_use("Bash", command, USAGE),
        anthropic.text("Back.", USAGE),
    )
    config = claude_config(permission_mode="bypassPermissions")
    with claude_session(tmp_path, config, script) as cli:
        _interrupt_mid_tool(cli, "time.sleep(317)", cli.cwd / "late.txt")


def test_codex_interrupted_mid_exec_kills_the_command(tmp_path: Path) -> None:
    """Codex running `sleep 318` for exec_command: interrupted, the sleep is gone."""
    script = openai.OpenAIScript(
        openai.function_call("exec_command", {"cmd": "sleep 318 && touch late.txt"}, USAGE),
        openai.text("Back.", USAGE),
    )
    with codex_session(tmp_path, codex_config(approval_policy="never"), script) as cli:
        _interrupt_mid_tool(cli, "sleep 318", cli.cwd / "late.txt")
