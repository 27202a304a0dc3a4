"""Adapters facing a harness that misbehaves: the turn fails naming the cause, the worker
never crashes and serves the next turn (a fake harness: the real CLIs cannot be made to)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
import trio

from ._drive import base_env, final, message_text, run_turn, spec, started_worker, work_dir

FAKE = Path(__file__).with_name("fake_harness.py")


def fake_command(tmp_path: Path) -> str:
    """An executable wrapper (the adapters take one `command` path) around the fake."""
    wrapper = tmp_path / "fake-harness"
    wrapper.write_text(f'#!/bin/sh\nexec "{os.path.abspath(sys.executable)}" "{FAKE}" "$@"\n')
    wrapper.chmod(0o755)
    return str(wrapper)


@pytest.mark.parametrize("module", ["claude_code", "codex"])
@pytest.mark.parametrize(
    ("mode", "reason"),
    [
        ("garbage", "not JSON: 'this is not json'"),
        ("exit", "exited with status 3"),
        ("hang", "produced no output for 1.5 s"),
    ],
)
async def test_misbehaving_harness_fails_the_turn_with_its_cause(
    tmp_path: Path, module: str, mode: str, reason: str
) -> None:
    """A non-JSON line, an exit or a hang fails the turn with a reason naming it (and the
    stderr tail); the next turn starts the harness again and fails the same way."""
    protocol = "claude" if module == "claude_code" else "codex"
    env = {**base_env(tmp_path / "home"), "FAKE_MODE": mode, "FAKE_PROTOCOL": protocol}
    options = {"command": fake_command(tmp_path), "idleTimeoutMs": "1500"}
    with trio.fail_after(60):
        async with started_worker(spec(module, work_dir(tmp_path), env, options)) as handle:
            first = await run_turn(handle, "turn-1", "hello")
            second = await run_turn(handle, "turn-2", "hello again")
    for events in (first, second):
        assert final(events).kind == "failed", final(events)
        assert reason in (final(events).text or "")
    if mode == "exit":
        assert "fatal: the model exploded" in (final(first).text or "")


@pytest.mark.parametrize("module", ["claude_code", "codex"])
async def test_unknown_event_is_kept_as_a_diagnostic(tmp_path: Path, module: str) -> None:
    """An event type the adapter does not know becomes a diagnostic; the turn completes."""
    protocol = "claude" if module == "claude_code" else "codex"
    env = {**base_env(tmp_path / "home"), "FAKE_MODE": "unknown", "FAKE_PROTOCOL": protocol}
    options = {"command": fake_command(tmp_path)}
    with trio.fail_after(60):
        async with started_worker(spec(module, work_dir(tmp_path), env, options)) as handle:
            events = await run_turn(handle, "turn-1", "hello")
            with trio.fail_after(10):
                while not any(  # noqa: ASYNC110 - diagnostics have no event
                    "unknownType" in r or "unknownMethod" in r for r in handle.diagnostics
                ):
                    await trio.sleep(0.05)
    assert final(events).kind == "completed", final(events)
    assert message_text(events) == "fine"
    (record,) = [r for r in handle.diagnostics if "unknownType" in r or "unknownMethod" in r]
    assert record.get("unknownType", record.get("unknownMethod")) in (
        "mystery_event",
        "mystery/notification",
    )
