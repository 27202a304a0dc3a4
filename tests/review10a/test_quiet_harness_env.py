"""docs/agents.md "No traffic but the model's", read off the running harness processes of a
real Node: mid-turn, the real Claude Code and Codex processes carry every quieting variable,
Codex's command line turns off update checks, analytics and feedback, and a variable of the
Node's environment the executor does not list (a canary secret) reaches neither."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.maia.agents._executors import claude_config, claude_session, codex_config, codex_session
from tests.maia.agents._node import WAIT_S, send, worker_pid
from tests.maia.cli._node import Cli
from tests.worker_bridge.agents import _anthropic as anthropic
from tests.worker_bridge.agents import _openai as openai
from worker_bridge.workers._agent_env import QUIET
from worker_bridge.workers._descendants import descendants

CANARY = "MAIA_REVIEW_CANARY_SECRET"
CODEX_FLAGS = ("check_for_update_on_startup=false", "analytics.enabled=false",
               "feedback.enabled=false")  # fmt: skip


def _harness(cli: Cli, name: bytes) -> tuple[dict[str, str], list[str]]:
    """The environment and argv of the worker's descendant whose argv[0] ends in `name`,
    once the turn runs (bounded)."""
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        try:
            pids = [pid for pid, _ in descendants(worker_pid(cli))]
        except TypeError:  # no live attempt yet
            pids = []
        for pid in pids:
            try:
                argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
                environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
            except OSError:
                continue
            if argv and argv[0].endswith(name):
                pairs = (entry.decode().partition("=") for entry in environ if entry)
                return {k: v for k, _, v in pairs}, [a.decode() for a in argv if a]
        time.sleep(0.1)
    raise AssertionError(f"no {name!r} process under the worker")


def _assert_quiet(environment: dict[str, str]) -> None:
    assert {k: environment.get(k) for k in QUIET} == QUIET
    assert CANARY not in environment
    assert "CLAUDECODE" not in environment


def test_claude_code_runs_quiet_and_without_the_nodes_other_variables(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Mid-turn: every QUIET variable set, the canary absent."""
    monkeypatch.setenv(CANARY, "do-not-pass")
    script = anthropic.AnthropicScript(anthropic.hanging("Thinking", {"input": 1, "output": 1}))
    with claude_session(tmp_path, claude_config(), script) as cli:
        send(cli, "hello")
        environment, _ = _harness(cli, b"claude")
        _assert_quiet(environment)


def test_codex_runs_quiet_and_without_the_nodes_other_variables(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Mid-turn: every QUIET variable set, the -c flags on its command line, no canary."""
    monkeypatch.setenv(CANARY, "do-not-pass")
    script = openai.OpenAIScript(openai.hanging("Thinking"))
    with codex_session(tmp_path, codex_config(), script) as cli:
        send(cli, "hello")
        environment, argv = _harness(cli, b"codex")
        _assert_quiet(environment)
        assert "app-server" in argv, argv
        assert all(flag in argv for flag in CODEX_FLAGS), argv
