"""Every command of `maia routine`, `webhook`, `machine`, `approval` and `observe` (and
`session wait`) says in `--help` what it does and shows examples, and each example parses
with the real command-line parser (so an example cannot go stale silently)."""

from __future__ import annotations

import shlex

import click
import pytest

from maia.cli import parse_invocation
from maia.cli._examples import EXAMPLES
from maia.cli._invocation import command_tree

GROUPS = ("routine", "webhook", "machine", "approval", "observe")


def _commands(group: str) -> list[tuple[str, ...]]:
    tree = command_tree((group,)).commands[group]
    assert isinstance(tree, click.Group)
    return [(group, name) for name in tree.commands]


@pytest.mark.parametrize("group", GROUPS)
def test_every_command_of_the_group_has_a_description_and_examples(group: str) -> None:
    """Each command's help has a summary line and an Examples block naming the command."""
    commands = _commands(group)
    assert commands
    for path in commands:
        text = parse_invocation([*path, "--help"]).text
        assert text is not None
        summary = text.split("\n\n")[1].strip()
        assert summary
        assert not summary.startswith("Operation"), path
        assert "Examples:\n" in text, path
        assert f"maia {' '.join(path)} " in text.split("Examples:\n", 1)[1], path


@pytest.mark.parametrize(("path", "line"), [(p, x) for p, lines in EXAMPLES.items() for x in lines])
def test_each_example_parses(path: tuple[str, ...], line: str) -> None:
    """The example is the command it documents, and the real parser takes it."""
    argv = shlex.split(line)
    assert argv[0] == "maia"
    assert tuple(argv[1 : 1 + len(path)]) == path
    invocation = parse_invocation(argv[1:])
    assert not invocation.text  # not a help or usage text
    assert invocation.operation_id is not None
