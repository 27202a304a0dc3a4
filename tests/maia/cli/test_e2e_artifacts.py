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


def _rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def _node_pid(cli: Cli) -> int:
    return int(json.loads((cli.home / "node.json").read_text())["pid"])


def test_a_700_kb_output_completes_and_turn_show_keeps_answering(cli: Cli) -> None:
    """A 700,000-character reply: the item keeps the first 262,144 characters and is marked
    truncated with the artifact holding the rest (together: the whole reply, once), and
    `turn show` answers (under the 1 MiB frame) with outputTruncated."""
    session = _session(cli, "big-output")
    sent = cli("turn", "send", session, "/spew 700000", "--wait", "--timeout", "120s", "--json")
    assert sent.returncode == 0, sent.stderr
    turn_id = json.loads(sent.stdout)["result"]["turn"]["turnId"]
    shown = cli("turn", "show", turn_id, "--json")
    assert shown.returncode == 0, shown.stderr
    assert len(shown.stdout.encode()) < 1024 * 1024
    result = json.loads(shown.stdout)["result"]
    assert result["turn"]["state"] == "completed"
    assert result["turn"]["outputTruncated"] is True
    (item,) = [i for i in result["items"] if i["kind"] == "message"]
    assert item["truncated"] is True
    assert len(item["text"]) <= 262_144
    rest = Path(item["artifactPath"]).read_text(encoding="utf-8")
    assert stat.S_IMODE(os.stat(item["artifactPath"]).st_mode) == 0o600
    assert len(rest) == 700_000 - 262_144
    whole = ("0123456789" * 410)[:4095] + "\n"
    expected = whole * (700_000 // 4096) + "x" * (700_000 % 4096)
    assert result["turn"]["outputText"] == expected[: len(result["turn"]["outputText"])]
    assert rest == expected[262_144:]


def test_a_50_mb_output_ends_the_wait_cleanly_without_the_node_holding_it(cli: Cli) -> None:
    """A 50,000,000-character reply ends `turn send --wait` with exit 0, and the Node's RSS
    grows by far less than the text (the item bound holds; the rest streams to a file)."""
    session = _session(cli, "flood")
    warm = cli("turn", "send", session, "/spew 300000", "--wait", "--timeout", "120s")
    assert warm.returncode == 0, warm.stderr
    before = _rss_kib(_node_pid(cli))
    sent = cli("turn", "send", session, "/spew 50000000", "--wait", "--timeout", "600s",
               "--json")  # fmt: skip
    assert sent.returncode == 0, sent.stderr
    assert json.loads(sent.stdout)["result"]["turn"]["state"] == "completed"
    grew_kib = _rss_kib(_node_pid(cli)) - before
    assert grew_kib < 20 * 1024, grew_kib  # 50 MB of text held would be ~50,000 KiB or more
    shown = cli("turn", "show", json.loads(sent.stdout)["result"]["turn"]["turnId"], "--json")
    assert shown.returncode == 0, shown.stderr
