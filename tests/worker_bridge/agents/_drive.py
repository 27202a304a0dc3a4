"""Driving an adapter worker the way the Node does: a real subprocess under the supervisor.

`run_turn` iterates one turn's events and answers each `maia.approval` tool call with the
test's decision (allow, deny, or none: leave it pending until the test interrupts).
Every test's agent reaches only its loopback mock: the environment points the CLI there
and turns off telemetry, update checks and other non-essential traffic.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
import trio

from supervision.workers import (
    MemoryEpochSource,
    TurnEvent,
    WorkerHandle,
    WorkerSpec,
    WorkerTimings,
    open_worker_supervisor,
)
from worker_bridge.workers._agent_env import QUIET, bundled_claude, bundled_codex

TIMINGS = WorkerTimings(
    init_ms=15_000, heartbeat_ms=1_000, interrupt_ms=10_000, terminate_ms=3_000, kill_wait_ms=3_000
)
INSTALL = "install the agents extra: .venv/bin/pip install -e '.[agents]' (CI must have it)"

Decide = Callable[[dict[str, Any]], dict[str, Any] | None]


def need_claude() -> str:
    path = bundled_claude()
    if path is None:
        pytest.fail(f"the Claude Code binary (claude-agent-sdk) is missing: {INSTALL}")
    return path


def need_codex() -> str:
    path = bundled_codex()
    if path is None:
        pytest.fail(f"the Codex binary (openai-codex-cli-bin) is missing: {INSTALL}")
    return path


def base_env(home: Path) -> dict[str, str]:
    """A private HOME and the quiet variables: nothing reaches past the loopback mock."""
    home.mkdir(parents=True, exist_ok=True)
    return {"HOME": str(home), "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1", **QUIET}


def spec(
    module: str,
    cwd: Path,
    env: dict[str, str],
    options: dict[str, str] | None = None,
    activation: dict[str, Any] | None = None,
) -> WorkerSpec:
    return WorkerSpec.python_module(
        f"worker_bridge.workers.{module}",
        cwd=str(cwd),
        env=env,
        options=options or {},
        activation=activation or {},
    )


def work_dir(tmp_path: Path) -> Path:
    """The worker's working directory below the test's tmp_path."""
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    return work


@contextlib.asynccontextmanager
async def started_worker(worker_spec: WorkerSpec) -> AsyncIterator[WorkerHandle]:
    """One worker under its own supervisor, initialized; stopped with the supervisor."""
    async with open_worker_supervisor(MemoryEpochSource(), TIMINGS) as supervisor:
        handle = await supervisor.start_worker(worker_spec)
        await handle.wait_initialized()
        yield handle


def interrupt_on(handle: WorkerHandle, turn_id: str, kind: str) -> Callable[[TurnEvent], Any]:
    """An `on_event` for `run_turn` that interrupts `turn_id` at each event of `kind`."""

    async def on_event(event: TurnEvent) -> None:
        if event.kind == kind:
            await handle.interrupt(turn_id)

    return on_event


def allow(remember: bool = False) -> Decide:
    return lambda _request: {"decision": "allow", "remember": remember}


def deny(message: str = "not this time") -> Decide:
    return lambda _request: {"decision": "deny", "message": message}


async def run_turn(
    handle: WorkerHandle,
    turn_id: str,
    text: str,
    decide: Decide | None = None,
    *,
    on_event: Callable[[TurnEvent], Any] | None = None,
) -> list[TurnEvent]:
    """Every event of one turn; approvals answered by `decide` (None: left pending)."""
    events: list[TurnEvent] = []
    async with contextlib.aclosing(handle.prompt(turn_id, text, tools=True)) as stream:
        async for event in stream:
            events.append(event)
            if on_event is not None:
                await on_event(event)
            if event.kind == "tool-call" and decide is not None:
                data = event.data or {}
                assert data["name"] == "maia.approval"
                answer = decide(data["arguments"])
                if answer is not None:
                    await handle.tool_result(turn_id, data["callId"], True, json.dumps(answer))
    return events


def items(events: list[TurnEvent], kind: str = "item.completed") -> list[dict[str, Any]]:
    return [e.data["item"] for e in events if e.kind == kind and e.data]


def item_types(events: list[TurnEvent]) -> list[str]:
    return [i["type"] for i in items(events)]


def message_text(events: list[TurnEvent]) -> str:
    return "".join(e.text or "" for e in events if e.kind == "delta")


def conversation(events: list[TurnEvent]) -> dict[str, Any] | None:
    found = [e.data for e in events if e.kind == "conversation"]
    return found[-1] if found else None


def usage(events: list[TurnEvent]) -> dict[str, Any]:
    (found,) = [i for i in items(events) if i["type"] == "usage"]
    return found


def final(events: list[TurnEvent]) -> TurnEvent:
    assert events, "no events"
    assert events[-1].final, f"the turn did not end: {events[-1]}"
    return events[-1]


async def interrupt_when(handle: WorkerHandle, turn_id: str, seen: trio.Event) -> None:
    await seen.wait()
    await handle.interrupt(turn_id)


def tree_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True
