"""Issue 18 items 11–13 against a real Node process (real sockets, real echo workers):
a prompt over the worker frame's 16 KiB travels as an artifact reference and is answered in
full; the artifact goes with its turn."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from ._node import Cli, running_node


@pytest.fixture(scope="module")
def cli(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cli]:
    """A foreground Node on a fresh home, and a Project directory to run the CLI in."""
    with running_node(tmp_path_factory.mktemp("cliart")) as started:
        yield started


def _session(cli: Cli, title: str) -> str:
    made = cli("session", "create", "--title", title, "--json")
    assert made.returncode == 0, made.stderr
    return str(json.loads(made.stdout)["result"]["session"]["sessionId"])


def test_a_60000_character_prompt_reaches_the_worker_whole(cli: Cli, tmp_path: Path) -> None:
    """A 60,000-character prompt (~90 KB of UTF-8, past the 16 KiB frame content bound) is
    answered in full by the echo worker; its artifact is gone once the turn ended and its
    folder is 0700."""
    session = _session(cli, "long-prompt")
    line = "ligne ünïcödé – a long prompt\n"
    prompt = (line * (60_000 // len(line) + 1))[:60_000]
    assert len(prompt.encode()) > 16 * 1024
    path = tmp_path / "long.txt"
    path.write_text(prompt, encoding="utf-8")
    sent = cli.process("turn", "send", session, "--file", str(path), "--wait")
    assert sent.returncode == 0, sent.stderr
    assert sent.stdout.rstrip("\n") == prompt.rstrip("\n")
    shown = cli("session", "show", session, "--json")
    latest = json.loads(shown.stdout)["result"]["session"]["latestTurnId"]
    turn = json.loads(cli("turn", "show", latest, "--json").stdout)["result"]["turn"]
    assert (turn["state"], turn["outputText"]) == ("completed", prompt)
    folder = cli.home / "artifacts" / "sha256"
    assert stat.S_IMODE(os.stat(folder).st_mode) == 0o700
    assert list(folder.iterdir()) == []  # removed with its turn (turns are never pruned)


def test_a_launch_that_fails_fails_its_turn_and_leaves_the_session_usable(cli: Cli) -> None:
    """A Session whose cwd is gone: the send fails `worker_failed` with the reason, the
    Session goes back to idle with `failureMessage` naming it; once the folder is back the
    next send completes and the failure is cleared; a stopped Session's refusal says so."""
    work = cli.cwd / "work"
    work.mkdir()
    made = cli("session", "create", "--title", "moved", "--cwd", str(work), "--json")
    assert made.returncode == 0, made.stderr
    session = json.loads(made.stdout)["result"]["session"]["sessionId"]
    work.rmdir()
    sent = cli("turn", "send", session, "first", "--wait", "--timeout", "60s", "--json")
    assert sent.returncode == 5, sent.stderr
    turn = json.loads(sent.stdout)["result"]["turn"]
    assert turn["failureReason"] == "worker_failed"
    assert "start failed" in (turn.get("failureMessage") or ""), turn
    shown = json.loads(cli("session", "show", session, "--json").stdout)["result"]["session"]
    assert shown["state"] == "idle"
    assert "start failed" in shown["failureMessage"]
    work.mkdir()
    again = cli.process("turn", "send", session, "second", "--wait", "--timeout", "60s")
    assert again.returncode == 0, again.stderr
    assert again.stdout == "second\n"
    shown = json.loads(cli("session", "show", session, "--json").stdout)["result"]["session"]
    assert "failureMessage" not in shown or shown["failureMessage"] is None
    assert cli("session", "stop", session).returncode == 0
    refused = cli("turn", "send", session, "third")
    assert refused.returncode != 0
    assert "the Session is stopp" in refused.stderr  # stopping, or stopped already
    assert "create a new Session" in refused.stderr
