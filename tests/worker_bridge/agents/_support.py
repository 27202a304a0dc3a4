"""What the Claude Code and Codex tests share, at the worker level and end to end: each
CLI's environment pointed at its loopback mock, a worker started on it, and the checks
both make of a turn's events."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from supervision.workers import TurnEvent, WorkerHandle

from ._drive import base_env, final, items, spec, started_worker, usage, work_dir
from ._sse_server import SseServer


def claude_env(base: Path, server: SseServer, home: str = "home") -> dict[str, str]:
    """Claude Code with the Anthropic mock as its API, HOME `base/home` (`IS_SANDBOX`: root
    may bypass permissions)."""
    return {
        **base_env(base / home),
        "ANTHROPIC_BASE_URL": server.url,
        "ANTHROPIC_API_KEY": "dummy-key",
        "IS_SANDBOX": "1",
    }


def codex_env(base: Path, server: SseServer, home: str = "home") -> dict[str, str]:
    """CODEX_HOME (`base/codex-home`) whose only model provider is the loopback OpenAI mock,
    HOME `base/home`."""
    codex_home = base / "codex-home"
    codex_home.mkdir(exist_ok=True)
    (codex_home / "config.toml").write_text(
        'model = "gpt-mock"\nmodel_provider = "mock"\n'
        "check_for_update_on_startup = false\n[analytics]\nenabled = false\n"
        f'[model_providers.mock]\nname = "mock"\nbase_url = "{server.url}/v1"\n'
        'wire_api = "responses"\nenv_key = "MOCK_API_KEY"\n'
    )
    return {
        **base_env(base / home),
        "CODEX_HOME": str(codex_home),
        "MOCK_API_KEY": "dummy-key",
    }


@asynccontextmanager
async def mock_worker(
    harness: str, tmp_path: Path, env: dict[str, str], **kwargs: Any
) -> AsyncIterator[WorkerHandle]:
    """A `harness` worker in `tmp_path/work` with `env` (its mock's), under the supervisor."""
    async with started_worker(spec(harness, work_dir(tmp_path), env, **kwargs)) as handle:
        yield handle


def assert_completed(*turns: list[TurnEvent]) -> None:
    for events in turns:
        assert final(events).kind == "completed", final(events)


def tokens(events: list[TurnEvent], *more: str) -> tuple[int, ...]:
    """(inputTokens, outputTokens, *more) of the turn's usage."""
    turn_usage = usage(events)
    return tuple(turn_usage[key] for key in ("inputTokens", "outputTokens", *more))


def of_type(events: list[TurnEvent], item_type: str, kind: str = "item.completed") -> list[Any]:
    """The items of `item_type` among the turn's `kind` events."""
    return [i for i in items(events, kind) if i["type"] == item_type]
