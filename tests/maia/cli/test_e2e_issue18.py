"""Issue 18's command fixes against a real Node process (real sockets, real echo workers):
`receipt get --receipt-id`, `turn wait --timeout` (exit 3 while it runs, 5 when it failed),
`turn send --file PATH|-`, a non-UTF-8 title, Ctrl-C on `events read --follow`, and a
worker's tool call refused at once (`tool_unavailable`)."""

from __future__ import annotations

import json
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from ._node import TIMEOUT_S, Cli, reaped, running_node


@pytest.fixture(scope="module")
def cli(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cli]:
    """A foreground Node on a fresh home, and a Project directory to run the CLI in."""
    with running_node(tmp_path_factory.mktemp("cli18")) as started:
        yield started


def _session(cli: Cli, title: str) -> str:
    made = cli("session", "create", "--title", title, "--json")
    assert made.returncode == 0, made.stderr
    return str(json.loads(made.stdout)["result"]["session"]["sessionId"])


def test_receipt_get_by_receipt_id_and_by_command_id(cli: Cli) -> None:
    """A receipt is found by its ID (the CLI no longer adds a commandId beside it) and by
    the commandId of the command that made it: the same receipt both ways."""
    made = cli("session", "create", "--title", "receipted", "--command-id", "cmd-receipted",
               "--json")  # fmt: skip
    assert made.returncode == 0, made.stderr
    receipt_id = json.loads(made.stdout)["result"]["receiptId"]
    by_id = cli("receipt", "get", "--receipt-id", receipt_id, "--json")
    assert by_id.returncode == 0, by_id.stderr
    by_command = cli("receipt", "get", "--command-id", "cmd-receipted", "--json")
    assert by_command.returncode == 0, by_command.stderr
    found = [json.loads(r.stdout)["result"]["receipt"] for r in (by_id, by_command)]
    assert found[0] == found[1]
    assert (found[0]["receiptId"], found[0]["operationId"]) == (receipt_id, "session.create")


def test_turn_wait_repeats_until_its_timeout_then_exits_3(cli: Cli) -> None:
    """`turn wait TURN --timeout 6s` on a running turn repeats the Node's 4 s wait and exits
    3 (the turn goes on); after an interrupt it exits 5; a completed turn exits 0."""
    session = _session(cli, "waited-on")
    sent = cli("turn", "send", session, "/sleep 60000 late", "--json")
    assert sent.returncode == 0, sent.stderr
    turn_id = json.loads(sent.stdout)["result"]["turn"]["turnId"]
    running = cli("turn", "wait", turn_id, "--timeout", "6s", "--json")
    assert running.returncode == 3, running.stderr
    assert "did not get there within 6 s" in running.stderr
    assert json.loads(running.stdout)["result"]["turn"]["state"] in ("queued", "running")
    assert cli("turn", "interrupt", turn_id).returncode == 0
    interrupted = cli("turn", "wait", turn_id, "--timeout", "60s")
    assert interrupted.returncode == 5, interrupted.stderr
    assert "interrupted" in interrupted.stderr
    quick = cli("turn", "send", session, "quick", "--json")
    quick_id = json.loads(quick.stdout)["result"]["turn"]["turnId"]
    done = cli("turn", "wait", quick_id, "--timeout", "60s", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["result"]["turn"]["state"] == "completed"


def test_turn_send_reads_the_prompt_from_a_file_or_stdin(cli: Cli, tmp_path: Path) -> None:
    """`--file PATH` sends the file's text exactly (newlines and all); `--file -` reads
    stdin; a file that is not UTF-8 is refused with exit 2 and nothing is sent."""
    session = _session(cli, "from-files")
    prompt = "".join(f"ligne {n}: ünïcödé\n" for n in range(300))  # ~6 KB, many lines
    path = tmp_path / "prompt.txt"
    path.write_text(prompt, encoding="utf-8")
    from_file = cli.process("turn", "send", session, "--file", str(path), "--wait")
    assert from_file.returncode == 0, from_file.stderr
    assert from_file.stdout == prompt
    from_stdin = cli.process("turn", "send", session, "--file", "-", "--wait",
                             stdin=b"piped prompt")  # fmt: skip
    assert from_stdin.returncode == 0, from_stdin.stderr
    assert from_stdin.stdout == "piped prompt\n"
    bad = tmp_path / "latin1.txt"
    bad.write_bytes("café".encode("latin-1"))
    refused = cli("turn", "send", session, "--file", str(bad))
    assert refused.returncode == 2, refused.stderr
    assert "not UTF-8" in refused.stderr
    shown = cli("session", "show", session, "--json")
    latest = json.loads(shown.stdout)["result"]["session"]["latestTurnId"]
    turn = cli("turn", "show", latest, "--json")
    assert json.loads(turn.stdout)["result"]["turn"]["outputText"] == "piped prompt"


def test_a_non_utf8_title_is_refused_before_it_reaches_the_node(cli: Cli) -> None:
    """Raw non-UTF-8 bytes in an argument: exit 2 with a clear message, no traceback."""
    done = cli.process(b"session", b"create", b"--title", b"caf\xe9")
    assert done.returncode == 2, done.stderr
    assert "argument 4 is not valid UTF-8 (byte 0xe9 at character 3)" in done.stderr
    assert "Traceback" not in done.stderr


def test_ctrl_c_on_events_follow_prints_the_resume_cursor(cli: Cli) -> None:
    """SIGINT on `events read --follow --jsonl`: exit 130 and, on stderr, the cursor to go
    on from, which `events read --after` accepts."""
    _session(cli, "journaled")
    process = cli.popen("events", "read", "--follow", "--jsonl")
    with reaped(process):
        assert process.stdout is not None
        first = json.loads(process.stdout.readline())  # caught up to at least one event
        assert first["journalPosition"] >= 1
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=TIMEOUT_S)
    assert process.returncode == 130, err
    marker = "continue with --after "
    assert marker in err, err
    cursor = err.split(marker, 1)[1].split()[0]
    resumed = cli("events", "read", "--after", cursor, "--json")
    assert resumed.returncode == 0, resumed.stderr


def test_a_tool_call_fails_its_turn_at_once_with_tool_unavailable(cli: Cli) -> None:
    """An echo `/tool` turn (a worker asking for a tool, with no tool host in the Node)
    ends failed with the typed refusal instead of hanging; the Session takes the next turn."""
    session = _session(cli, "tool-user")
    asked = cli("turn", "send", session, "/tool upper shout", "--wait", "--timeout", "30s")
    assert asked.returncode == 5, asked.stderr
    assert "tool_unavailable" in asked.stderr
    after = cli("turn", "send", session, "next", "--wait", "--timeout", "30s")
    assert (after.returncode, after.stdout) == (0, "next\n"), after.stderr


def test_turn_list_pages_a_sessions_turns_newest_first(cli: Cli) -> None:
    """`turn list SESSION` lists the Session's turns newest first; `--limit` pages with a
    cursor that continues where the page ended; `turn show` prints the whole prompt."""
    session = _session(cli, "listed")
    long_prompt = "word " * 100  # past the 160-byte preview
    sent = [cli("turn", "send", session, text, "--wait") for text in ("one", "two", long_prompt)]
    assert [s.returncode for s in sent] == [0, 0, 0]
    first = cli("turn", "list", session, "--limit", "2", "--json")
    assert first.returncode == 0, first.stderr
    page = json.loads(first.stdout)["result"]
    rest = cli("turn", "list", session, "--limit", "2", "--cursor", page["nextCursor"], "--json")
    second = json.loads(rest.stdout)["result"]
    assert second["nextCursor"] is None
    turns = page["turns"] + second["turns"]
    assert [t["inputPreview"][:3] for t in turns] == ["wor", "two", "one"]
    assert all(t["sessionId"] == session for t in turns)
    table = cli("turn", "list", session)
    assert table.stdout.splitlines()[0].split() == ["ID", "STATE", "SENT", "REASON", "INPUT"]
    shown = cli("turn", "show", turns[0]["turnId"], "--json")
    assert json.loads(shown.stdout)["result"]["prompt"] == long_prompt
    missing = cli("turn", "list", "session_00000000000000000000000000000000")
    assert missing.returncode != 0


def test_a_worker_failed_turn_says_why(cli: Cli) -> None:
    """A worker that crashes mid-turn: the turn fails `worker_failed` with a message naming
    the exit status, shown by `turn send --wait` and kept with the turn (`turn show`)."""
    session = _session(cli, "crashing")
    sent = cli("turn", "send", session, "/crash", "--wait", "--timeout", "60s", "--json")
    assert sent.returncode == 5, sent.stderr
    turn = json.loads(sent.stdout)["result"]["turn"]
    assert turn["failureReason"] == "worker_failed"
    assert "with status 3" in (turn.get("failureMessage") or ""), turn
    shown = cli("turn", "show", turn["turnId"], "--json")
    items = json.loads(shown.stdout)["result"]["items"]
    assert any(i["kind"] == "error" and "with status 3" in i["text"] for i in items)
