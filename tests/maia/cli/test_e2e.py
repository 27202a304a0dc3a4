"""The `maia` CLI as a real process against a real Node process (real sockets, real echo
workers): create, send --wait, list as a table and as --json, the exit codes of a failed
turn (5), an unreachable Node (6), a timed-out wait (3), an ambiguous reference (2)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from maia.client import read_discovery

from ._node import MAIA, TIMEOUT_S, Cli, reaped, running_node


@pytest.fixture(scope="module")
def cli(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cli]:
    """A foreground Node on a fresh home, and a Project directory to run the CLI in."""
    with running_node(tmp_path_factory.mktemp("cli")) as started:
        yield started


def test_create_send_wait_list(cli: Cli) -> None:
    """create (in the cwd's Project), send --wait prints the reply, list as table and JSON."""
    created = cli("session", "create", "--title", "greeter", "--json")
    assert created.returncode == 0, created.stderr
    session = json.loads(created.stdout)["result"]["session"]
    assert session["title"] == "greeter"
    assert "added Project" in created.stderr

    sent = cli.process("turn", "send", "greeter", "hello from the CLI", "--wait")
    assert sent.returncode == 0, sent.stderr
    assert sent.stdout == "hello from the CLI\n"

    records = cli("turn", "send", "greeter", "streamed", "--wait", "--jsonl")
    assert records.returncode == 0, records.stderr
    *streamed, last = [json.loads(line) for line in records.stdout.splitlines()]
    assert "item.delta" in [r.get("record") for r in streamed]  # live, from session.attach
    assert streamed[-1]["record"] == "turn.completed"
    assert (last["state"], last["outputText"]) == ("completed", "streamed")

    table = cli("session", "list")
    assert table.returncode == 0, table.stderr
    header, *rows = table.stdout.splitlines()
    assert header.split() == ["ID", "TITLE", "STATE", "ACTIVITY", "PENDING", "UPDATED"]
    row = next(r for r in rows if r.startswith(session["sessionId"]))
    assert "greeter" in row
    assert header.index("TITLE") == row.index("greeter")  # aligned under its header

    listed = cli("session", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    document = json.loads(listed.stdout)
    assert document["ok"] is True
    assert session["sessionId"] in [s["sessionId"] for s in document["result"]["sessions"]]

    jsonl = cli("session", "list", "--jsonl")
    assert [json.loads(line)["sessionId"] for line in jsonl.stdout.splitlines()].count(
        session["sessionId"]
    ) == 1

    prefix = session["sessionId"].removeprefix("session_")[:8]
    shown = cli("session", "show", f"session_{prefix}")
    assert shown.returncode == 0, shown.stderr
    assert "latestTurnState  completed" in shown.stdout


def test_failed_turn_exits_5(cli: Cli) -> None:
    """A turn whose worker crashes (`/crash`) ends the --wait with exit 5 and the reason."""
    assert cli("session", "create", "--title", "crasher").returncode == 0
    sent = cli.process("turn", "send", "crasher", "/crash", "--wait")
    assert sent.returncode == 5, sent.stderr
    assert "failed" in sent.stderr
    again = cli("turn", "send", "crasher", "/crash", "--wait", "--json")
    assert again.returncode == 5
    assert json.loads(again.stdout)["result"]["turn"]["state"] == "failed"


def test_ambiguous_reference_lists_candidates(cli: Cli) -> None:
    """Two Sessions with one title: the reference is ambiguous, exit 2, both IDs listed."""
    ids = []
    for _ in range(2):
        made = cli("session", "create", "--title", "twin", "--json")
        assert made.returncode == 0, made.stderr
        ids.append(json.loads(made.stdout)["result"]["session"]["sessionId"])
    shown = cli("session", "show", "twin")
    assert shown.returncode == 2
    assert shown.stdout == ""
    for session_id in ids:
        assert session_id in shown.stderr


def test_session_wait_times_out_with_3(cli: Cli) -> None:
    """`session wait --state running --timeout 1s` on an idle Session exits 3 after waiting."""
    assert cli("session", "create", "--title", "sleeper").returncode == 0
    waited = cli("session", "wait", "sleeper", "--state", "running", "--timeout", "1s")
    assert waited.returncode == 3, waited.stderr
    satisfied = cli("session", "wait", "sleeper", "--state", "idle", "--timeout", "5s")
    assert satisfied.returncode == 0, satisfied.stderr


def test_session_wait_on_a_stopped_session_ends_at_once(cli: Cli) -> None:
    """`session wait --state running` on a stopped Session (terminal: it can never run
    again) exits 5 on the first answer, naming the state, however long `--timeout` is;
    a state or activity it is in still satisfies it (0)."""
    assert cli("session", "create", "--title", "stopped-one").returncode == 0
    assert cli("session", "stop", "stopped-one").returncode == 0
    # A 10-minute timeout: waiting it out would hit the 90 s process bound and fail here.
    waited = cli.process(
        "session", "wait", "stopped-one", "--state", "running", "--timeout", "10m", "--json"
    )
    assert waited.returncode == 5, waited.stderr
    answer = json.loads(waited.stdout)["result"]
    assert (answer["satisfied"], answer["session"]["state"]) == (False, "stopped")
    assert "is stopped: it cannot reach the state running" in waited.stderr
    by_activity = cli.process("session", "wait", "stopped-one", "--activity", "idle",
                              "--timeout", "10m")  # fmt: skip
    assert by_activity.returncode == 5, by_activity.stderr
    reached = cli("session", "wait", "stopped-one", "--state", "stopped", "--timeout", "10m")
    assert reached.returncode == 0, reached.stderr


def test_events_follow_prints_then_stops_at_timeout(cli: Cli) -> None:
    """`events read --follow --after CURSOR --jsonl` prints, one a line, the events that
    happen while it follows (woken by the observation stream), and --timeout ends it, exit 0."""
    page = cli("events", "read", "--limit", "500", "--json")
    assert page.returncode == 0, page.stderr
    cursor = json.loads(page.stdout)["result"]["nextCursor"]
    env = {**os.environ, "MAIA_HOME": str(cli.home)}
    process = subprocess.Popen(
        [*MAIA, "events", "read", "--follow", "--after", cursor, "--jsonl", "--timeout", "6s"],
        cwd=cli.cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    with reaped(process):
        time.sleep(1.5)  # not an assertion: usually lets the follower catch up first
        made = cli("session", "create", "--title", "watched", "--json")
        assert made.returncode == 0, made.stderr
        session_id = json.loads(made.stdout)["result"]["session"]["sessionId"]
        out, err = process.communicate(timeout=TIMEOUT_S)
    assert process.returncode == 0, err
    events = [json.loads(line) for line in out.splitlines()]
    assert ("session.created", session_id) in {(e["eventType"], e["ownerId"]) for e in events}
    positions = [e["journalPosition"] for e in events]
    assert positions == sorted(set(positions))


def test_unreachable_node_exits_6(cli: Cli, tmp_path: Path) -> None:
    """No Node for the home, or nothing listening at --node: exit 6, stdout empty."""
    refused = cli.process("session", "list", "--node", "ws://127.0.0.1:9/api/v1")
    absent = Cli(tmp_path / "empty-home", tmp_path).process("session", "list")
    for result in (refused, absent):
        assert result.returncode == 6, result.stderr
        assert result.stdout == ""
        assert "unavailable" in result.stderr


def test_dynamic_completion_of_session_titles(cli: Cli) -> None:
    """Shell completion of a Session reference offers live titles from the Node; with no
    Node it completes nothing, silently."""
    assert cli("session", "create", "--title", "completable").returncode == 0
    env = {"_MAIA_COMPLETE": "bash_complete", "COMP_WORDS": "maia session show compl",
           "COMP_CWORD": "3"}  # fmt: skip
    done = cli.process(env=env)
    assert done.returncode == 0, done.stderr
    assert "completable" in done.stdout
    nothing = Cli(cli.home.parent / "no-node", cli.cwd).process(env=env)
    assert nothing.returncode == 0
    assert nothing.stdout.strip() == ""
    assert nothing.stderr == ""


def test_ctrl_c_during_wait_exits_130(cli: Cli) -> None:
    """SIGINT while `turn send --wait` waits: exit 130, said on stderr, nothing on stdout."""
    assert cli("session", "create", "--title", "patient").returncode == 0
    env = {**os.environ, "MAIA_HOME": str(cli.home)}
    process = subprocess.Popen(
        [*MAIA, "turn", "send", "patient", "/sleep 60000 late", "--wait"],
        cwd=cli.cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    with reaped(process):
        assert process.stderr is not None
        line = process.stderr.readline()  # the progress note: the turn is being waited for
        assert "waiting for the turn" in line
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=TIMEOUT_S)
    assert process.returncode == 130, err
    assert out == ""
    assert "interrupted" in err


def test_bare_maia_starts_a_node_and_names_the_next_command(tmp_path: Path) -> None:
    """`maia` with no Node on the home starts one detached; without a terminal it prints the
    one next command instead of opening the console; a second run finds it running."""
    cli = Cli(tmp_path / "home", tmp_path)
    first = cli.process()
    try:
        assert first.returncode == 0, first.stderr
        assert "starting one" in first.stderr
        assert "maia turn send" in first.stderr
        record = read_discovery(tmp_path / "home" / "node.json")
        assert record is not None
        assert record.is_live()
        second = cli.process()
        assert second.returncode == 0, second.stderr
        assert "starting one" not in second.stderr
    finally:
        stopped = cli.process("node", "stop")
        assert stopped.returncode == 0, stopped.stderr


def test_session_attach_follows_live_turns(cli: Cli) -> None:
    """`session attach REF --jsonl` prints the stream's frames: a turn sent while it follows
    shows up with its text, and --timeout ends it with exit 0."""
    assert cli("session", "create", "--title", "followed").returncode == 0
    env = {**os.environ, "MAIA_HOME": str(cli.home)}
    process = subprocess.Popen(
        [*MAIA, "session", "attach", "followed", "--jsonl", "--timeout", "6s"],
        cwd=cli.cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    with reaped(process):
        assert process.stdout is not None
        assert json.loads(process.stdout.readline())["type"] == "attached"
        assert cli("turn", "send", "followed", "seen live").returncode == 0
        out, err = process.communicate(timeout=TIMEOUT_S)
    assert process.returncode == 0, err
    records = [r for line in out.splitlines() for r in json.loads(line).get("records", [])]
    assert {"record": "turn.completed", "turnState": "completed"}.items() <= records[-1].items()
    assert "seen live" in [r.get("text") for r in records]


def test_refused_token_exits_4(cli: Cli, tmp_path: Path) -> None:
    """The live Node refuses a wrong bearer token: exit 4 (authentication), stdout empty."""
    record = read_discovery(cli.home / "node.json")
    assert record is not None
    other = tmp_path / "other-home"
    other.mkdir(mode=0o700)
    token = other / "node.token"
    token.write_text("0" * 64)
    token.chmod(0o600)
    result = Cli(other, tmp_path).process("session", "list", "--node", record.url)
    assert result.returncode == 4, result.stderr
    assert result.stdout == ""
    assert "unauthenticated" in result.stderr


def test_an_archived_sessions_summary_is_shown(cli: Cli) -> None:
    """`session archive --summary --transcript-path`, then `session show`: the human block
    says when it was archived, the summary and the transcript path (not only `archived`)."""
    made = cli("session", "create", "--title", "to-archive", "--json")
    assert made.returncode == 0, made.stderr
    session_id = json.loads(made.stdout)["result"]["session"]["sessionId"]
    summary = "wrapped up the report: " + "every section checked, " * 4 + "done"
    path = "/srv/transcripts/" + "quarterly/" * 6 + "report.md"
    archived = cli("session", "archive", session_id, "--summary", summary,
                   "--transcript-path", path)  # fmt: skip
    assert archived.returncode == 0, archived.stderr
    shown = cli("session", "show", session_id)
    assert shown.returncode == 0, shown.stderr
    lines = {line.split()[0]: line for line in shown.stdout.splitlines() if line.strip()}
    assert lines["summary"].split(None, 1)[1] == summary
    assert lines["transcriptPath"].split(None, 1)[1] == path
    assert "archivedAt" in lines


def test_turn_show_prints_the_whole_prompt(cli: Cli) -> None:
    """`turn show TURN` (human) prints the whole prompt, as docs/cli.md says, not its first
    60 characters."""
    made = cli("session", "create", "--title", "long-prompt", "--json")
    assert made.returncode == 0, made.stderr
    prompt = "please answer this: " + "a rather long question, " * 10 + "end"
    sent = cli("turn", "send", "long-prompt", prompt, "--wait", "--json")
    assert sent.returncode == 0, sent.stderr
    shown = cli("turn", "show", json.loads(sent.stdout)["result"]["turn"]["turnId"])
    assert shown.returncode == 0, shown.stderr
    (line,) = [line for line in shown.stdout.splitlines() if line.startswith("prompt ")]
    assert line.split(None, 1)[1] == prompt


def test_control_characters_of_a_prompt_do_not_reach_the_terminal(cli: Cli) -> None:
    """A prompt holding a tab and a terminal escape: `turn list` and `turn show` (human)
    print them as spaces, so the table stays aligned and the terminal is not driven."""
    made = cli("session", "create", "--title", "controls", "--json")
    assert made.returncode == 0, made.stderr
    sent = cli("turn", "send", "controls", "a\tb\x1b[2Jc\rd", "--wait", "--json")
    assert sent.returncode == 0, sent.stderr
    turn_id = json.loads(sent.stdout)["result"]["turn"]["turnId"]
    listed = cli("turn", "list", "controls")
    shown = cli("turn", "show", turn_id)
    for done in (listed, shown):
        assert done.returncode == 0, done.stderr
        assert not any(c in done.stdout for c in "\t\x1b\r"), repr(done.stdout)
    assert "a b [2Jc d" in listed.stdout


def test_why_a_launch_failed_is_shown_whole(cli: Cli) -> None:
    """A Session whose folder went away: `session show` (human) prints its whole
    failureMessage, the folder's path included, not its first 60 characters."""
    folder = cli.cwd / "soon-gone"
    folder.mkdir()
    made = cli("session", "create", "--title", "launch-fails", "--cwd", str(folder), "--json")
    assert made.returncode == 0, made.stderr
    folder.rmdir()
    assert cli("turn", "send", "launch-fails", "hi", "--wait").returncode == 5
    shown = cli("session", "show", "launch-fails")
    assert shown.returncode == 0, shown.stderr
    (line,) = [line for line in shown.stdout.splitlines() if line.startswith("failureMessage ")]
    message = json.loads(cli("session", "show", "launch-fails", "--json").stdout)["result"][
        "session"
    ]["failureMessage"]
    assert str(folder) in message
    assert line.split(None, 1)[1] == message
