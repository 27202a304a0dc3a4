"""The real Claude Code and Codex executors for the agent end-to-end tests: their configs,
a Node with one Session `agent` on either reaching only its loopback model mock, and the
module-scoped `script` and `cli` fixtures most of those test modules share."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from tests.maia.cli._node import Cli
from tests.worker_bridge.agents import _anthropic as anthropic
from tests.worker_bridge.agents import _openai as openai
from tests.worker_bridge.agents._drive import need_claude, need_codex
from tests.worker_bridge.agents._support import claude_env, codex_env

from ._node import agent_session

# What each binary's worker may see of the Node's environment (IS_SANDBOX: root may run it).
CLAUDE_PASSED = ("HOME", "NO_PROXY", "no_proxy", "ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY")
CLAUDE_SANDBOX_PASSED = (*CLAUDE_PASSED, "IS_SANDBOX")
CODEX_PASSED = ("HOME", "NO_PROXY", "no_proxy", "CODEX_HOME", "MOCK_API_KEY")


def claude_config(
    passed: tuple[str, ...] = CLAUDE_SANDBOX_PASSED,
    permission_mode: str | None = "default",
    **top: object,
) -> str:
    """config.jsonc text with `top`'s sections and one executor `claude` (claude-code)."""
    executor: dict[str, object] = {"kind": "claude-code", "env": list(passed)}
    if permission_mode is not None:
        executor["permissionMode"] = permission_mode
    return json.dumps({**top, "executors": {"claude": executor}})


def codex_config(approval_policy: str = "untrusted", **top: object) -> str:
    """config.jsonc text with `top`'s sections and one executor `codex`."""
    executor = {"kind": "codex", "approvalPolicy": approval_policy, "env": list(CODEX_PASSED)}
    return json.dumps({**top, "executors": {"codex": executor}})


def claude_session(base: Path, config: str, script: Any) -> AbstractContextManager[Cli]:
    """A Node on `base` whose Session `agent` runs on `claude` against `script`'s mock."""
    need_claude()
    env_for = partial(claude_env, base, home="agent-home")
    return agent_session(base, config, env_for, script, "user:claude")


def codex_session(base: Path, config: str, script: Any) -> AbstractContextManager[Cli]:
    """A Node on `base` whose Session `agent` runs on `codex` against `script`'s mock."""
    need_codex()
    env_for = partial(codex_env, base, home="agent-home")
    return agent_session(base, config, env_for, script, "user:codex")


Fixture = Callable[..., Any]


def _module_fixtures(
    name: str,
    config: str,
    new_script: Callable[[], Any],
    session: Callable[[Path, str, Any], AbstractContextManager[Cli]],
) -> tuple[Fixture, Fixture]:
    @pytest.fixture(scope="module", name="script")
    def script_fixture() -> Any:
        return new_script()

    @pytest.fixture(scope="module", name="cli")
    def cli_fixture(tmp_path_factory: pytest.TempPathFactory, script: Any) -> Iterator[Cli]:
        with session(tmp_path_factory.mktemp(name), config, script) as cli:
            yield cli

    return script_fixture, cli_fixture


def claude_fixtures(name: str, config: str) -> tuple[Fixture, Fixture]:
    """Module fixtures `script` (an AnthropicScript) and `cli` (claude_session on a fresh
    `name` directory); assign them in the test module: `script, cli = claude_fixtures(...)`."""
    return _module_fixtures(name, config, anthropic.AnthropicScript, claude_session)


def codex_fixtures(name: str, config: str) -> tuple[Fixture, Fixture]:
    """Module fixtures `script` (an OpenAIScript) and `cli` (codex_session), as above."""
    return _module_fixtures(name, config, openai.OpenAIScript, codex_session)
