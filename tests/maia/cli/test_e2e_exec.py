"""The exec executor through a real Node (config.jsonc, real Session, real exec worker):
a line-reading program sees the prompt's last line, and a script whose background child
holds stdout is stopped at its wall time within the interrupt grace: `wall_time_exceeded`,
and the same worker answers the next turn (it was not stopped for hanging)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from ._node import Cli, running_node

# A script with its own memory: it appends to a file in the Session's state directory.
MEMORY = 'echo "$MAIA_SESSION_ID"; echo seen >> "$MAIA_STATE_DIR/m"; wc -l < "$MAIA_STATE_DIR/m"'
CONFIG = json.dumps(
    {
        "executors": {
            "lines": {"kind": "exec", "argv": ["/bin/sh", "-c",
                                               'while read -r l; do echo "[$l]"; done']},
            "busy": {"kind": "exec", "wallTimeMs": 1000,
                     "argv": ["/bin/sh", "-c", "sleep 120 & echo worker $PPID; wait"]},
            "memory": {"kind": "exec", "argv": ["/bin/sh", "-c", MEMORY]},
            "count": {"kind": "exec", "argv": ["/usr/bin/wc", "-c"]},
            "exact": {"kind": "exec", "argv": ["/usr/bin/wc", "-c"], "promptNewline": False},
            "grumble": {"kind": "exec", "argv": ["/bin/sh", "-c",
                                                 "echo 'Runtime error: Divide by zero' >&2"]},
            "nul": {"kind": "exec", "argv": ["/usr/bin/printf", "a\\000b"]},
        }
    }
)  # fmt: skip


@pytest.fixture(scope="module")
def cli(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cli]:
    """A foreground Node whose config names two exec executors."""
    with running_node(tmp_path_factory.mktemp("exec"), CONFIG) as started:
        yield started


def test_a_line_reading_program_gets_the_prompt_as_a_line(cli: Cli) -> None:
    """`1+1` typed without a newline still reaches `read` as a line (it used to be lost)."""
    assert cli("session", "create", "--title", "calc", "--executor", "user:lines").returncode == 0
    sent = cli("turn", "send", "calc", "1+1", "--wait", "--timeout", "60s")
    assert sent.returncode == 0, sent.stderr
    assert sent.stdout == "[1+1]\n"


def test_wall_time_stops_a_script_with_a_background_child(cli: Cli) -> None:
    """The wall time interrupts the program's whole group: the turn fails with
    `wall_time_exceeded` (the worker was not lost) and the Session takes the next turn."""
    assert cli("session", "create", "--title", "busy", "--executor", "user:busy").returncode == 0
    sent = cli("turn", "send", "busy", "go", "--wait", "--timeout", "60s", "--json")
    assert sent.returncode == 5, sent.stderr
    first = json.loads(sent.stdout)["result"]["turn"]
    assert (first["state"], first["failureReason"]) == ("failed", "wall_time_exceeded")
    again = cli("turn", "send", "busy", "again", "--wait", "--timeout", "60s", "--json")
    second = json.loads(again.stdout)["result"]["turn"]
    assert second["failureReason"] == "wall_time_exceeded"
    # The program's parent is the exec worker: the same one both times, so the interrupt
    # ended the turn and the worker was never stopped for overrunning the interrupt grace.
    assert first["outputText"].startswith("worker ")
    assert first["outputText"] == second["outputText"]


def test_a_script_keeps_its_memory_in_the_sessions_state_directory(cli: Cli) -> None:
    """The Node gives the exec program MAIA_SESSION_ID and MAIA_STATE_DIR (in the home,
    0700 with every folder above it): what one turn's program writes there, the next
    turn's program reads."""
    made = cli("session", "create", "--title", "rememberer", "--executor", "user:memory",
               "--json")  # fmt: skip
    session_id = json.loads(made.stdout)["result"]["session"]["sessionId"]
    first = cli("turn", "send", "rememberer", "one", "--wait", "--timeout", "60s")
    assert first.stdout.split() == [session_id, "1"], first.stderr
    second = cli("turn", "send", "rememberer", "two", "--wait", "--timeout", "60s")
    assert second.stdout.split() == [session_id, "2"], second.stderr
    state = cli.home / "sessions" / session_id / "state"
    assert (state / "m").read_text() == "seen\nseen\n"
    for folder in (state, state.parent, state.parent.parent):  # sessions/<id>/state
        assert folder.stat().st_mode & 0o777 == 0o700, folder


def test_prompt_newline_false_reaches_the_program(cli: Cli) -> None:
    """`wc -c` counts the added newline by default, and not with `promptNewline: false`."""
    for title, executor, count in (("counted", "user:count", "4"), ("exact", "user:exact", "3")):
        assert cli("session", "create", "--title", title, "--executor", executor).returncode == 0
        sent = cli("turn", "send", title, "abc", "--wait", "--timeout", "60s")
        assert sent.stdout.strip() == count, (title, sent.stderr)


def test_a_program_that_exits_0_but_complains_shows_its_stderr(cli: Cli) -> None:
    """Like `bc` on `1/0`: exit 0 with nothing on stdout and a complaint on stderr completes,
    and `turn show` carries a command item with the stderr's last lines (it showed nothing)."""
    created = cli("session", "create", "--title", "grumble", "--executor", "user:grumble")
    assert created.returncode == 0, created.stderr
    sent = cli("turn", "send", "grumble", "1/0", "--wait", "--timeout", "60s", "--json")
    assert sent.returncode == 0, sent.stderr
    turn_id = json.loads(sent.stdout)["result"]["turn"]["turnId"]
    shown = json.loads(cli("turn", "show", turn_id, "--json").stdout)["result"]
    commands = [i for i in shown["items"] if i["kind"] == "command"]
    assert len(commands) == 1, shown["items"]
    assert "Runtime error: Divide by zero" in commands[0]["text"]
    assert "exited 0" in commands[0]["text"]
    human = cli("turn", "show", turn_id)
    assert "Divide by zero" in human.stdout


def test_a_reply_with_a_nul_character_is_kept_whole(cli: Cli) -> None:
    """A program printing `a NUL b`: the turn's outputText and its item keep all three
    characters (SQLite's substr() and length() used to end the text at the NUL)."""
    assert cli("session", "create", "--title", "nul", "--executor", "user:nul").returncode == 0
    sent = cli("turn", "send", "nul", "go", "--wait", "--timeout", "60s", "--json")
    assert sent.returncode == 0, sent.stderr
    turn = json.loads(sent.stdout)["result"]["turn"]
    assert turn["outputText"] == "a\x00b"
    shown = json.loads(cli("turn", "show", turn["turnId"], "--json").stdout)["result"]
    assert [i["text"] for i in shown["items"] if i["kind"] == "message"] == ["a\x00b"]
