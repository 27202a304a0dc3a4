"""Review (s7-review2): a prompt at turn.send's limit (65,536 characters, past the worker
frame's 16 KiB, so it travels as an artifact file) reaches the real Claude Code and Codex
binaries whole through a real Node and `maia turn send --file` (docs/sessions.md), the
model's request carries every character, and the artifact file is gone once the turn
ended. The only network peer is each binary's loopback mock."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.maia.agents._executors import (
    CLAUDE_PASSED,
    claude_config,
    claude_session,
    codex_config,
    codex_session,
)
from tests.maia.agents._node import run, wait_turn
from tests.maia.cli._node import Cli
from tests.worker_bridge.agents import _anthropic as anthropic
from tests.worker_bridge.agents import _openai as openai

LIMIT = 65_536


def long_prompt() -> str:
    """LIMIT characters, multi-byte and with line breaks, marked at both ends."""
    head, tail = "BEGIN-MARK ", " END-MARK"
    body = ("é😀 line\n" * LIMIT)[: LIMIT - len(head) - len(tail)]
    text = head + body + tail
    assert len(text) == LIMIT
    return text


def send_file(cli: Cli, text: str, tmp: Path) -> str:
    path = tmp / "prompt.txt"
    path.write_text(text, encoding="utf-8")
    sent = run(cli, "turn", "send", "agent", "--file", str(path))
    return str(sent["turn"]["turnId"])


def leftover_artifacts(cli: Cli) -> list[Path]:
    root = cli.home / "artifacts"
    return [p for p in root.rglob("*") if p.is_file()] if root.exists() else []


def _reaches_the_model_whole(cli: Cli, script: Any, field: str, tmp: Path) -> None:
    """long_prompt() sent as a file: the turn completes with it as its prompt, the model's
    last request's `field` holds every character, and no artifact file is left."""
    text = long_prompt()
    shown = wait_turn(cli, send_file(cli, text, tmp))
    assert shown["turn"]["state"] == "completed", shown["turn"]
    assert shown["prompt"] == text
    request = json.dumps(script.main[-1].body[field], ensure_ascii=False)
    assert json.dumps(text, ensure_ascii=False)[1:-1] in request
    assert leftover_artifacts(cli) == []


def test_a_prompt_at_the_limit_reaches_claude_code_whole(tmp_path: Path) -> None:
    """65,536 characters through Claude Code: the Messages request holds them all."""
    script = anthropic.AnthropicScript(anthropic.text("Read it all", {"input": 9, "output": 3}))
    config = claude_config(CLAUDE_PASSED, permission_mode=None)
    with claude_session(tmp_path, config, script) as cli:
        _reaches_the_model_whole(cli, script, "messages", tmp_path)


def test_a_prompt_at_the_limit_reaches_codex_whole(tmp_path: Path) -> None:
    """65,536 characters through Codex app-server: the Responses request holds them all."""
    script = openai.OpenAIScript(openai.text("Read it all", {"input": 9, "output": 3}))
    with codex_session(tmp_path, codex_config(approval_policy="never"), script) as cli:
        _reaches_the_model_whole(cli, script, "input", tmp_path)
