"""A new user's rough edges, against a real Node process and real `maia` child processes:
`turn send --file -` with stdin closed or empty, `maia console` with stdin closed, and
Project / Session references in nested fields (`routine create`, `webhook add`)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from ._node import MAIA, TIMEOUT_S, Cli, reaped, running_node


@pytest.fixture(scope="module")
def cli(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cli]:
    """A foreground Node on a fresh home (a local webhook receiver admitted), and a Project
    directory to run the CLI in."""
    config = '{"webhooks": {"allowAddresses": ["127.0.0.1/32"]}}'
    with running_node(tmp_path_factory.mktemp("audit"), config=config) as started:
        yield started


def _closed_stdin(cli: Cli, *args: str) -> subprocess.CompletedProcess[str]:
    """`maia ARGS` as a child process whose descriptor 0 is closed, as a shell's `<&-`."""
    return subprocess.run(
        [*MAIA, *args], capture_output=True, cwd=cli.cwd, env=cli.environment(),
        timeout=TIMEOUT_S, preexec_fn=lambda: os.close(0), check=False, text=True,
    )  # fmt: skip


def _session(cli: Cli, title: str) -> str:
    made = cli("session", "create", "--title", title, "--json")
    assert made.returncode == 0, made.stderr
    return str(json.loads(made.stdout)["result"]["session"]["sessionId"])


def _latest_turn(cli: Cli, session: str) -> object:
    shown = cli("session", "show", session, "--json")
    return json.loads(shown.stdout)["result"]["session"].get("latestTurnId")


def test_file_dash_with_stdin_closed_is_a_usage_error_naming_the_flag(cli: Cli) -> None:
    """`--file -` in a process whose descriptor 0 is closed (`<&-`): exit 2 naming `--file`
    and the closed stdin, no traceback, and no turn is sent."""
    session = _session(cli, "closed-stdin")
    done = _closed_stdin(cli, "turn", "send", session, "--file", "-", "--wait")
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert "--file: - reads stdin, but stdin is closed" in done.stderr
    assert _latest_turn(cli, session) is None


def test_file_dash_with_empty_stdin_says_stdin_is_empty(cli: Cli) -> None:
    """`--file -` reading an empty stdin: exit 2 saying stdin is empty (not a bare length
    rule on `text`), with the field in the JSON error's details; no turn is sent."""
    session = _session(cli, "empty-stdin")
    done = cli.process("turn", "send", session, "--file", "-", "--json", stdin=b"")
    assert done.returncode == 2, done.stderr
    error = json.loads(done.stdout)["error"]
    assert error["code"] == "validation_failed"
    assert error["details"]["path"] == "text"
    assert "stdin is empty" in error["message"]
    assert _latest_turn(cli, session) is None


def test_console_with_stdin_closed_is_a_usage_error_not_a_traceback(cli: Cli) -> None:
    """`maia console` with descriptor 0 closed, a Node running: exit 2 saying stdin is
    closed and what to run instead (was prompt_toolkit's AttributeError traceback)."""
    done = _closed_stdin(cli, "console", "--home", str(cli.home))
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert "maia console: stdin is closed" in done.stderr
    assert "run `maia COMMAND` instead" in done.stderr


def test_routine_create_resolves_a_project_key_as_session_create_does(
    cli: Cli, tmp_path: Path
) -> None:
    """`routine create --project-id KEY` (a spread field of the preview/confirm pair) is
    resolved to the Project's exact ID before the preview, as `session create` resolves it
    (was `resource_not_found` for the key); an unknown key is still refused by name."""
    added = cli("project", "add", str(tmp_path), "--project-key", "audited", "--json")
    assert added.returncode == 0, added.stderr
    project_id = json.loads(added.stdout)["result"]["project"]["projectId"]
    args = ["routine", "create", "--name", "by-key", "--cron", "0 9 * * 1-5",
            "--timezone", "Europe/Berlin", "--prompt", "summarize"]  # fmt: skip
    made = cli.process(*args, "--project-id", "audited", "--yes", "--json")
    assert made.returncode == 0, made.stderr
    routine = json.loads(made.stdout)["result"]["routine"]
    assert routine["template"]["projectId"] == project_id
    unknown = cli.process(*args, "--project-id", "nosuchkey", "--dry-run", "--json")
    assert unknown.returncode != 0
    assert "nosuchkey" in json.loads(unknown.stdout)["error"]["message"]


def test_webhook_add_resolves_its_project_and_session_references(cli: Cli, tmp_path: Path) -> None:
    """`webhook add --project-id KEY --session-id TITLE` stores the exact IDs (was the typed
    text, a filter that matches no event); an unknown key is refused and nothing is added."""
    added = cli("project", "add", str(tmp_path), "--project-key", "hooked", "--json")
    assert added.returncode == 0, added.stderr
    project_id = json.loads(added.stdout)["result"]["project"]["projectId"]
    session = cli("session", "create", "--title", "hooked-session", "--project-id", project_id,
                  "--json")  # fmt: skip
    session_id = json.loads(session.stdout)["result"]["session"]["sessionId"]
    args = ["webhook", "add", "--url", "http://127.0.0.1:9/in", "--event", "turn.completed",
            "--secret-env", "MAIA_AUDIT_SECRET"]  # fmt: skip
    made = cli.process(*args, "--project-id", "hooked", "--session-id", "hooked-session",
                       "--yes", "--json")  # fmt: skip
    assert made.returncode == 0, made.stderr
    webhook = json.loads(made.stdout)["result"]["webhook"]
    assert (webhook["projectId"], webhook["sessionId"]) == (project_id, session_id)
    before = cli("webhook", "list", "--json").stdout
    unknown = cli.process(*args, "--project-id", "nosuchkey", "--dry-run")
    assert unknown.returncode == 1, unknown.stderr
    assert "project nosuchkey does not exist" in unknown.stderr
    refused = cli.process(*args, "--project-id", "nosuchkey", "--yes")
    assert refused.returncode == 1, refused.stderr
    assert cli("webhook", "list", "--json").stdout == before


def test_send_wait_past_its_timeout_still_prints_the_turn_with_json(cli: Cli) -> None:
    """`turn send --wait --timeout 1s --json` on a long turn: exit 3, and stdout holds the
    one document (the turn as it is, still going) instead of nothing; --jsonl its line."""
    session = _session(cli, "timed-out")
    done = cli.process("turn", "send", session, "/sleep 60000 late", "--wait",
                       "--timeout", "1s", "--json")  # fmt: skip
    assert done.returncode == 3, done.stderr
    turn = json.loads(done.stdout)["result"]["turn"]
    assert turn["state"] in ("queued", "running")
    assert f"turn {turn['turnId']} did not end within 1 s" in done.stderr
    assert cli("turn", "interrupt", turn["turnId"]).returncode == 0
    lines = cli.process("turn", "send", session, "/sleep 60000 later", "--wait",
                        "--timeout", "1s", "--jsonl")  # fmt: skip
    assert lines.returncode == 3, lines.stderr
    last = json.loads(lines.stdout.splitlines()[-1])
    assert last["state"] in ("queued", "running")
    assert cli("turn", "interrupt", last["turnId"]).returncode == 0


@pytest.mark.parametrize(
    ("args", "path"),
    [
        (["session", "list", "--limit", "abc"], "--limit"),
        (["session", "show"], "SESSION"),
        (["session", "list", "--bogus"], "--bogus"),
        (["turn", "send", "some-session"], "TEXT"),
    ],
)
def test_a_usage_error_with_json_is_one_error_document(
    cli: Cli, args: list[str], path: str | None
) -> None:
    """A bad flag value, a missing argument, an unknown flag with `--json`: exit 2, the
    message on stderr, and on stdout the one `{"ok": false, "error": ...}` document (was
    nothing), naming the flag or argument when click knows it."""
    done = cli.process(*args, "--json")
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("maia: ")
    document = json.loads(done.stdout)
    assert document["ok"] is False
    assert document["error"]["code"] == "invalid_request"
    assert document["error"]["message"] in done.stderr
    assert document["error"]["details"].get("path") == path
    plain = cli.process(*args)
    assert (plain.returncode, plain.stdout) == (2, "")


def test_a_stream_with_json_is_refused_pointing_at_jsonl(cli: Cli) -> None:
    """`events read --follow --json` and `session attach --json` exit 2 naming --jsonl
    (they printed JSON lines under a flag that promises one document); --jsonl streams."""
    session = _session(cli, "streamed")
    for args in (["events", "read", "--follow", "--timeout", "1s"],
                 ["session", "attach", session, "--timeout", "1s"]):  # fmt: skip
        refused = cli.process(*args, "--json")
        assert refused.returncode == 2, refused.stderr
        assert "this streams: use --jsonl" in refused.stderr
        streamed = cli.process(*args, "--jsonl")
        assert streamed.returncode == 0, streamed.stderr
        assert [json.loads(line) for line in streamed.stdout.splitlines()]


def test_ctrl_c_during_send_wait_says_the_turn_goes_on_and_how_to_find_it(cli: Cli) -> None:
    """SIGINT on `turn send --wait` while the turn runs: exit 130, and stderr names the
    command's receipt look-up, whose receipt names the turn, still running."""
    session = _session(cli, "interrupted-wait")
    process = cli.popen("turn", "send", session, "/sleep 60000 late", "--wait",
                        "--command-id", "cmd-ctrl-c")  # fmt: skip
    with reaped(process):
        assert process.stderr is not None
        assert "waiting for the turn" in process.stderr.readline()  # sent, now waiting
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=TIMEOUT_S)
    assert process.returncode == 130, err
    note = "`maia receipt get --command-id cmd-ctrl-c --operation-id turn.send`"
    assert f"the turn, if sent, goes on: {note}" in err
    receipt = cli("receipt", "get", "--command-id", "cmd-ctrl-c", "--json")
    assert receipt.returncode == 0, receipt.stderr
    turn_id = json.loads(receipt.stdout)["result"]["receipt"]["targets"][0]["targetId"]
    # A person reads it in the human output too: the turn's whole ID, not its first digits.
    human = cli("receipt", "get", "--command-id", "cmd-ctrl-c")
    assert f"targets        {turn_id} (" in human.stdout, human.stdout
    shown = cli("turn", "show", turn_id, "--json")
    assert json.loads(shown.stdout)["result"]["turn"]["state"] in ("queued", "running")
    assert cli("turn", "interrupt", turn_id).returncode == 0
