"""Adapters facing a harness that misbehaves: the turn fails naming the cause, the worker
never crashes and serves the next turn (a fake harness: the real CLIs cannot be made to)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
import trio

from ._drive import (
    base_env,
    final,
    interrupt_on,
    message_text,
    run_turn,
    spec,
    started_worker,
    tree_alive,
    work_dir,
)

FAKE = Path(__file__).with_name("fake_harness.py")


def fake_command(tmp_path: Path) -> str:
    """An executable wrapper (the adapters take one `command` path) around the fake."""
    wrapper = tmp_path / "fake-harness"
    wrapper.write_text(f'#!/bin/sh\nexec "{os.path.abspath(sys.executable)}" "{FAKE}" "$@"\n')
    wrapper.chmod(0o755)
    return str(wrapper)


PROTOCOLS = {"claude_code": "claude", "codex": "codex", "acp": "acp"}
UNKNOWN_KEYS = {"unknownType", "unknownMethod", "unknownUpdate"}


def fake_options(module: str, tmp_path: Path, **extra: str) -> dict[str, str]:
    """The options that make `module` run the fake harness."""
    command = fake_command(tmp_path)
    if module == "acp":
        return {"argv": json.dumps([command]), **extra}
    return {"command": command, **extra}


@pytest.mark.parametrize("module", ["claude_code", "codex", "acp"])
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
    protocol = PROTOCOLS[module]
    env = {**base_env(tmp_path / "home"), "FAKE_MODE": mode, "FAKE_PROTOCOL": protocol}
    options = fake_options(module, tmp_path, idleTimeoutMs="1500")
    with trio.fail_after(60):
        async with started_worker(spec(module, work_dir(tmp_path), env, options)) as handle:
            first = await run_turn(handle, "turn-1", "hello")
            second = await run_turn(handle, "turn-2", "hello again")
    for events in (first, second):
        assert final(events).kind == "failed", final(events)
        assert reason in (final(events).text or "")
    if mode == "exit":
        assert "fatal: the model exploded" in (final(first).text or "")


@pytest.mark.parametrize("module", ["claude_code", "codex", "acp"])
async def test_unknown_event_is_kept_as_a_diagnostic(tmp_path: Path, module: str) -> None:
    """An event type the adapter does not know becomes a diagnostic; the turn completes."""
    protocol = PROTOCOLS[module]
    env = {**base_env(tmp_path / "home"), "FAKE_MODE": "unknown", "FAKE_PROTOCOL": protocol}
    options = fake_options(module, tmp_path)
    with trio.fail_after(60):
        async with started_worker(spec(module, work_dir(tmp_path), env, options)) as handle:
            events = await run_turn(handle, "turn-1", "hello")
            with trio.fail_after(10):
                while not any(  # noqa: ASYNC110 - diagnostics have no event
                    set(r) & UNKNOWN_KEYS for r in handle.diagnostics
                ):
                    await trio.sleep(0.05)
    assert final(events).kind == "completed", final(events)
    assert message_text(events) == "fine"
    (record,) = [r for r in handle.diagnostics if set(r) & UNKNOWN_KEYS]
    (key,) = set(record) & UNKNOWN_KEYS
    assert record[key] in ("mystery_event", "mystery/notification", "mystery_update")


@pytest.mark.parametrize("module", ["claude_code", "codex", "acp"])
async def test_an_interrupt_the_harness_ignores_drops_it(tmp_path: Path, module: str) -> None:
    """A harness that never reads the interrupt: within the Node's 10 s interrupt grace the
    turn ends interrupted (not lost: the worker lives), the harness is gone, and the next
    turn starts a new one."""
    pids = tmp_path / "pids"
    env = {
        **base_env(tmp_path / "home"),
        "FAKE_MODE": "deaf",
        "FAKE_PROTOCOL": PROTOCOLS[module],
        "FAKE_PID_FILE": str(pids),
    }
    with trio.fail_after(90):
        async with started_worker(
            spec(module, work_dir(tmp_path), env, fake_options(module, tmp_path))
        ) as handle:
            first = await run_turn(
                handle, "turn-1", "hello", on_event=interrupt_on(handle, "turn-1", "conversation")
            )
            assert final(first).kind == "interrupted", final(first)
            (pid,) = [int(p) for p in pids.read_text().split()]
            assert not tree_alive(pid)
            second = await run_turn(
                handle, "turn-2", "again", on_event=interrupt_on(handle, "turn-2", "conversation")
            )
    assert final(second).kind == "interrupted", final(second)
    assert len(pids.read_text().split()) == 2  # a fresh harness for the next turn


@pytest.mark.parametrize("module", ["claude_code", "codex", "acp"])
async def test_a_line_over_the_bound_fails_the_turn_naming_it(tmp_path: Path, module: str) -> None:
    """A stdout line over 32 MiB is skipped, not held: the turn fails saying the line was
    too long, and the worker serves the next turn."""
    env = {**base_env(tmp_path / "home"), "FAKE_MODE": "huge", "FAKE_PROTOCOL": PROTOCOLS[module]}
    with trio.fail_after(90):
        async with started_worker(
            spec(module, work_dir(tmp_path), env, fake_options(module, tmp_path))
        ) as handle:
            events = await run_turn(handle, "turn-1", "hello")
    assert final(events).kind == "failed", final(events)
    assert f"printed a line longer than {32 * 1024 * 1024} bytes" in (final(events).text or "")
