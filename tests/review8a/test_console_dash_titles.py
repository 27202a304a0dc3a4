"""The console's completion of Session titles, taken through the CLI's own parser as the
console runs a line (split like a shell, then `parse_invocation`): accepting a completed
title must name that Session. A title may begin with `-` (`maia session create --title=-x`
is accepted, and `maia session show -- -x` shows it). The completer offered it bare, and the
completed line `session show -x` was an unknown option; it now completes a positional
reference as `-- TITLE` (bare after a `--` or as an option's value)."""

from __future__ import annotations

import shlex

import click
import pytest
from prompt_toolkit.completion import CompleteEvent
from prompt_toolkit.document import Document

from maia.cli import command_tree, parse_invocation
from maia.console import ConsoleCompleter, SessionCache
from maia.console._completer import _is_session_param

ODD_TITLES = ["Bob's report", 'say "hi"', "a\\b", "$HOME", "semi;colon", "#hash", "ünï"]
DASH_TITLES = ["-x", "--help", "- draft"]


def _completed_lines(title: str, line: str) -> list[str]:
    """Every line the completer makes of `line` (a command and a space) for a cache that
    holds one live Session titled `title`, less the Session-ID and option completions."""
    cache = SessionCache()
    session_id = "session_" + "c" * 32
    cache.seed([{"sessionId": session_id, "title": title, "state": "running"}])
    completer = ConsoleCompleter(command_tree(), cache)
    found = completer.get_completions(Document(line), CompleteEvent(True))
    return [
        line[: len(line) + c.start_position] + c.text
        for c in found
        if c.text != session_id and session_id in c.display_meta_text  # not an option
    ]


def _session_named(line: str) -> str:
    invocation = parse_invocation(shlex.split(line))
    assert invocation.operation_id == "session.show"
    return str(invocation.params["sessionId"])


@pytest.mark.parametrize("title", ODD_TITLES)
def test_a_completed_title_with_shell_characters_names_its_session(title: str) -> None:
    """Quotes, backslashes, `$`, `;`, `#`: the completed line parses to the exact title."""
    lines = _completed_lines(title, "session show ")
    assert lines, "the title was not offered"
    assert [_session_named(line) for line in lines] == [title]


@pytest.mark.parametrize("title", DASH_TITLES)
def test_a_completed_title_beginning_with_a_dash_names_its_session(title: str) -> None:
    """A title beginning with `-`: the completed line still names the Session (as `--
    TITLE`, or its ID), not an option."""
    lines = _completed_lines(title, "session show ")
    assert lines, "the title was not offered"
    assert [_session_named(line) for line in lines] == [title]


@pytest.mark.parametrize("title", DASH_TITLES)
def test_a_dash_title_completes_from_its_first_characters(title: str) -> None:
    """Typing the title's start (`session show -`) offers the Session as `-- TITLE`, which
    names it."""
    lines = _completed_lines(title, "session show -")
    assert lines == [f"session show -- {shlex.quote(title)}"]
    assert _session_named(lines[0]) == title


def test_after_a_double_dash_and_as_an_option_value_the_title_is_bare() -> None:
    """After `--` and as `--session-id`'s value the title is offered bare, and the CLI
    reads it as the reference."""
    after = _completed_lines("-x", "session show -- ")
    assert after == ["session show -- -x"]
    assert _session_named(after[0]) == "-x"
    value = _completed_lines("-x", "approval list --session-id ")
    assert value == ["approval list --session-id -x"]
    invocation = parse_invocation(shlex.split(value[0]))
    assert invocation.params["sessionId"] == "-x"


def _session_ref_commands() -> list[tuple[tuple[str, ...], int]]:
    """Every CLI command whose positional REF the console completes as a Session."""
    found: list[tuple[tuple[str, ...], int]] = []

    def walk(command: click.Command, path: tuple[str, ...]) -> None:
        if isinstance(command, click.Group):
            ctx = click.Context(command)
            for name in command.list_commands(ctx):
                sub = command.get_command(ctx, name)
                assert sub is not None
                walk(sub, (*path, name))
            return
        arguments = [p for p in command.params if isinstance(p, click.Argument)]
        for index, argument in enumerate(arguments):
            if _is_session_param(path, argument, index):
                found.append((path, len(arguments) - index - 1))

    walk(command_tree(), ())
    return found


def test_every_command_taking_a_session_reference_reads_it_after_a_double_dash() -> None:
    """`COMMAND -- -x [more words]` gives every such command the reference `-x`."""
    commands = _session_ref_commands()
    assert (("session", "show"), 0) in commands
    assert len(commands) >= 8
    for path, after in commands:
        argv = [*path, "--", "-x", *(["words"] * after)]
        assert parse_invocation(argv).params["sessionId"] == "-x", argv
