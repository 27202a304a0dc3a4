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
    assert output(events) == "héllo exec"  # one trailing newline is not part of the reply
    assert events[-1].kind == "completed"
    assert {"turnId": "t", "stream": "stderr", "line": "warned"} in diagnostics
    items = [e.data["item"] for e in events if e.kind == "item.completed" and e.data]
    assert [(i["type"], i["exitCode"], i["stderr"]) for i in items] == [("command", 0, "warned")]


async def test_a_quiet_success_leaves_no_command_item(tmp_path: Path) -> None:
    """Exit 0 with nothing on stderr: only the reply, no command item."""
    events = await run(tmp_path, ["/bin/cat"], "quiet")
    assert [e.kind for e in events if e.kind.startswith("item.")] == []


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


def _alive(pid: int) -> bool:
    """Whether /proc shows `pid` as a process that is not a zombie."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    return "State:\tZ" not in status


async def _gone(pid: int, within_s: float = 10.0) -> bool:
    """Whether `pid` is gone within a generous bound: a SIGKILL is delivered at once but the
    process ends asynchronously, so right after the signal it may still show in /proc."""
    for _ in range(int(within_s / 0.05)):
        if not _alive(pid):
            return True
        await trio.sleep(0.05)
    return not _alive(pid)


async def test_interrupt_stops_a_script_and_its_background_child_within_the_bound(
    tmp_path: Path,
) -> None:
    """A script waiting on a background child that holds stdout: the interrupt reaches the
    program's whole process group, so the turn ends `interrupted` within the interrupt
    bound (the handle did not have to stop the worker) and the child is gone."""
    script = "sleep 60 & echo started $!; wait"
    spec = WorkerSpec.python_module(
        "worker_bridge.workers.exec",
        cwd=str(tmp_path),
        options={"argv": json.dumps(["/bin/sh", "-c", script])},
    )
    with trio.fail_after(30):
        async with open_worker_supervisor(MemoryEpochSource(), TIMINGS) as supervisor:
            handle = await supervisor.start_worker(spec)
            await handle.wait_initialized()
            events: list[TurnEvent] = []
            within_bound = None
            async for event in handle.prompt("t", ""):
                events.append(event)
                if event.kind == "delta" and "started" in (event.text or ""):
                    within_bound = await handle.interrupt("t")
            assert within_bound is True
            assert events[-1].kind == "interrupted"
            child = int(output(events).split()[1])
            assert await _gone(child)


async def test_a_background_child_holding_stdout_does_not_hold_the_turn(tmp_path: Path) -> None:
    """The program exits but leaves a child holding stdout open: the turn still completes
    (stdout is read at most two seconds past the exit) and the child is killed."""
    events = await run(tmp_path, ["/bin/sh", "-c", "sleep 60 & echo left $!"], "")
    assert events[-1].kind == "completed"
    assert await _gone(int(output(events).split()[1]))


async def test_the_prompt_ends_with_a_newline_unless_configured_not_to(tmp_path: Path) -> None:
    """A line-reading program sees the prompt's last line (the worker ends it with a
    newline); `promptNewline: false` sends it exactly; a newline already there stays one. The
    reply drops one trailing newline of stdout, no more."""
    lines = ["/bin/sh", "-c", 'while read -r line; do echo "[$line]"; done']
    assert output(await run(tmp_path, lines, "1+1")) == "[1+1]"
    newlines = ["/bin/sh", "-c", "wc -l | tr -d ' '; echo"]
    assert output(await run(tmp_path, newlines, "two\n")) == "1\n"
    assert output(await run(tmp_path, newlines, "one")) == "1\n"
    exact = await run(tmp_path, newlines, "as typed", promptNewline="false")
    assert output(exact) == "0\n"


async def test_the_session_id_and_its_state_directory_reach_the_program(tmp_path: Path) -> None:
    """From the activation: MAIA_SESSION_ID, and MAIA_STATE_DIR (made 0700) that keeps what
    a script writes across turns and worker attempts."""
    state = tmp_path / "state" / "session_abc"
    memory = '"$MAIA_STATE_DIR/memory"'
    script = f'echo "$MAIA_SESSION_ID"; echo seen >> {memory}; wc -l < {memory}'
    spec = WorkerSpec.python_module(
        "worker_bridge.workers.exec",
        cwd=str(tmp_path),
        options={"argv": json.dumps(["/bin/sh", "-c", script])},
        activation={"sessionId": "session_abc", "stateDir": str(state)},
    )
    answers = []
    with trio.fail_after(30):
        async with open_worker_supervisor(MemoryEpochSource(), TIMINGS) as supervisor:
            for attempt in range(2):  # a new attempt (a restarted worker) sees the same state
                handle = await supervisor.start_worker(spec)
                await handle.wait_initialized()
                answers.append(output([e async for e in handle.prompt(f"t{attempt}", "")]))
                await handle.stop()
    assert [a.split() for a in answers] == [["session_abc", "1"], ["session_abc", "2"]]
    assert state.stat().st_mode & 0o777 == 0o700


async def test_a_failed_program_s_message_carries_its_stderr_tail(tmp_path: Path) -> None:
    """A program that fails after explaining itself on stderr: the turn's message names the
    exit status and ends with those lines."""
    script = "echo 'Runtime error: divide by zero' >&2; exit 4"
    events = await run(tmp_path, ["/bin/sh", "-c", script], "1/0")
    assert events[-1].kind == "failed"
    assert events[-1].text == (
        "the program exited with status 4\nstderr (last lines):\nRuntime error: divide by zero"
    )
