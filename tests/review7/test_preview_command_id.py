"""A preview command run on its own (`maia X preview`) whose operation needs the command's
idempotency key (the confirm must repeat it) says so as every required option does: its
`--help` marks `--command-id` `[required]` and leaving it out is click's usage error naming
`--command-id` (exit 2), before anything is sent. Before, the help showed it as optional and
the error named the wire field (`commandId: is required`). Where the CLI makes the key
itself (a confirmation's stem, an op with idempotency `required`) it stays optional."""

from __future__ import annotations

import click
import pytest

from maia.cli import parse_invocation

PREVIEWS = [
    ["webhooks", "change", "preview", "--change", '{"kind": "remove", "webhookId": "hook_1"}'],
    ["routine", "run", "preview", "routine_1", "--expected-revision", "1"],
    ["routine", "disable", "preview", "routine_1", "--expected-revision", "1"],
    ["machine", "enroll", "preview", "box"],
]


@pytest.mark.parametrize("argv", PREVIEWS)
def test_a_preview_without_its_command_id_is_a_usage_error(argv: list[str]) -> None:
    """click refuses it, naming --command-id (as `maia` prints it: `Missing option
    '--command-id'.`)."""
    with pytest.raises(click.UsageError) as refused:
        parse_invocation(argv)
    assert "'--command-id'" in refused.value.format_message()


@pytest.mark.parametrize("argv", PREVIEWS)
def test_with_its_command_id_it_parses(argv: list[str]) -> None:
    """Given, it is the op's commandId."""
    assert parse_invocation([*argv, "--command-id", "c1"]).params["commandId"] == "c1"


@pytest.mark.parametrize(
    "argv",
    [
        ["routine", "run", "--routine-id", "routine_1", "--expected-revision", "1", "--yes"],
        ["webhook", "remove", "hook_1", "--yes"],
        ["session", "create", "--title", "t"],
    ],
)
def test_where_the_cli_makes_the_key_it_stays_optional(argv: list[str]) -> None:
    """A confirmation's stem, a shortcut and an op with idempotency required generate it."""
    assert parse_invocation(argv).params["commandId"].startswith("command_")
