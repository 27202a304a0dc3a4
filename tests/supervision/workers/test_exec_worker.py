"""The exec worker under the real supervisor: stdin, cwd, environment, status, bounds."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import trio

from supervision.workers import (
    MemoryEpochSource,
    TurnEvent,
    WorkerSpec,
    WorkerTimings,
    open_worker_supervisor,
)

TIMINGS = WorkerTimings(heartbeat_ms=100, interrupt_ms=3_000, terminate_ms=1_000)


async def run_with_diagnostics(
    tmp_path: Path, argv: list[str], prompt: str, **options: str
) -> tuple[list[TurnEvent], list[dict[str, Any]]]:
    spec = WorkerSpec.python_module(
        "worker_bridge.workers.exec",
        cwd=str(tmp_path),
        options={"argv": json.dumps(argv), **options},
    )
    with trio.fail_after(20):
        async with open_worker_supervisor(MemoryEpochSource(), TIMINGS) as supervisor:
            handle = await supervisor.start_worker(spec)
            await handle.wait_initialized()
            events = [event async for event in handle.prompt("t", prompt)]
            await trio.sleep(0.3)  # two heartbeat intervals: the diagnostics batch lands
            diagnostics = list(handle.diagnostics)
            await handle.stop()
    return events, diagnostics


async def run(tmp_path: Path, argv: list[str], prompt: str, **options: str) -> list[TurnEvent]:
    return (await run_with_diagnostics(tmp_path, argv, prompt, **options))[0]


def output(events: list[TurnEvent]) -> str:
    return "".join(e.text or "" for e in events if e.kind == "delta")


async def test_prompt_goes_to_stdin_and_stdout_streams_back(tmp_path: Path) -> None:
    """`cat` echoes the prompt; stderr arrives as diagnostics; exit 0 completes the turn."""
    events, diagnostics = await run_with_diagnostics(
        tmp_path, ["/bin/sh", "-c", "cat; echo warned >&2"], "héllo exec"
    )
    assert output(events) == "héllo exec"
    assert events[-1].kind == "completed"
    assert {"turnId": "t", "stream": "stderr", "line": "warned"} in diagnostics


async def test_runs_in_the_working_directory_with_a_filtered_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The program runs in the Session's directory and never sees the Node's secrets."""
    monkeypatch.setenv("MAIA_TEST_SECRET", "hunter2")
    events = await run(tmp_path, ["/bin/sh", "-c", "pwd; env"], "")
    text = output(events)
    assert text.splitlines()[0] == str(tmp_path)
    assert "hunter2" not in text
    assert "MAIA_WORKER_ATTEMPT=attempt_" in text


async def test_nonzero_exit_fails_the_turn(tmp_path: Path) -> None:
    """Exit status 3 is a failed turn naming the status."""
    events = await run(tmp_path, ["/bin/sh", "-c", "exit 3"], "")
    assert events[-1].kind == "failed"
    assert events[-1].text == "the program exited with status 3"


async def test_output_past_the_bound_stops_the_program(tmp_path: Path) -> None:
    """More output than maxOutputBytes stops the program and fails the turn."""
    events = await run(tmp_path, ["/usr/bin/yes"], "", maxOutputBytes="10000")
    assert events[-1].kind == "failed"
    assert "output exceeds 10000 bytes" in (events[-1].text or "")
    assert len(output(events).encode()) <= 10000


async def test_missing_argv_fails_the_turn_clearly(tmp_path: Path) -> None:
    """Without `argv` the turn fails with a message saying what is missing."""
    spec = WorkerSpec.python_module("worker_bridge.workers.exec", cwd=str(tmp_path))
    with trio.fail_after(20):
        async with open_worker_supervisor(MemoryEpochSource(), TIMINGS) as supervisor:
            handle = await supervisor.start_worker(spec)
            await handle.wait_initialized()
            events = [event async for event in handle.prompt("t", "x")]
    assert events[-1].kind == "failed"
    assert "needs `argv`" in (events[-1].text or "")
