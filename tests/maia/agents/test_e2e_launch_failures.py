"""A real Node whose agent binary is not on PATH, or exits 1 at start: the turn fails
`launch_failed` with a message naming the harness and the cause, in `turn show`, in
`turn send --wait`'s last line and in the event the console prints; the Session stays
usable."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from maia.console._cache import FeedEvent, SessionCache
from maia.console._render import render_event
from tests.maia.agents._node import node_with, run, send, wait_turn
from tests.maia.cli._node import Cli
from tests.worker_bridge.agents._drive import base_env

CRASH_SCRIPT = "#!/bin/sh\necho 'starting' >&2\necho 'fatal: no credentials found' >&2\nexit 1\n"


@pytest.fixture(scope="module")
def cli(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cli]:
    base = tmp_path_factory.mktemp("launch-failures")
    crash = base / "crashing-codex"
    crash.write_text(CRASH_SCRIPT)
    crash.chmod(0o755)
    empty = base / "empty-bin"
    empty.mkdir()
    executors = {
        "claude-gone": {"kind": "claude-code", "command": "claude", "env": ["HOME"]},
        "codex-crash": {"kind": "codex", "command": str(crash), "env": ["HOME"]},
    }
    env = {**base_env(base / "agent-home"), "PATH": str(empty)}
    with node_with(base, json.dumps({"executors": executors}), env) as node:
        for name in executors:
            created = node("session", "create", "--title", name, "--executor", f"user:{name}")
            assert created.returncode == 0, created.stderr
        yield node


def test_a_binary_not_on_path_fails_launch_failed(cli: Cli) -> None:
    """turn.show: failureReason launch_failed, the message names the harness and PATH."""
    for _ in range(2):  # the Session stays usable: the next turn tries again
        turn = wait_turn(cli, send(cli, "hello", "claude-gone"))["turn"]
        assert turn["state"] == "failed", turn
        assert turn["failureReason"] == "launch_failed", turn
        assert turn["failureMessage"] == "claude-code: 'claude' was not found on PATH", turn
    assert run(cli, "session", "show", "claude-gone")["session"]["state"] != "failed"


def test_a_binary_exiting_at_start_fails_launch_failed_with_its_stderr(cli: Cli) -> None:
    """`turn send --wait` ends with the code, the exit status and the stderr tail."""
    sent = cli("turn", "send", "codex-crash", "hello", "--wait")
    assert sent.returncode != 0, sent.stdout
    said = sent.stderr.strip()
    why = "failed (launch_failed): codex exited before answering (exited with status 1);"
    assert f"{why} stderr: starting\nfatal: no credentials found" in said, said
    assert said.endswith("fatal: no credentials found"), said


def test_the_console_prints_the_code(cli: Cli) -> None:
    """The console's line for the journal's turn.failed event carries launch_failed."""
    turn_id = send(cli, "hello", "claude-gone")
    wait_turn(cli, turn_id)
    page = run(cli, "events", "read", "--limit", "500")
    (failed,) = [
        e for e in page["events"] if e["eventType"] == "turn.failed" and e.get("turnId") == turn_id
    ]
    line = render_event(FeedEvent.from_journal(failed), SessionCache())
    assert line is not None
    assert f"{turn_id} (launch_failed)" in line, line
