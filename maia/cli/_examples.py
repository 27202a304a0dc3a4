"""Examples shown at the end of a command's `--help` (its click epilog), by command path.

Each line is a whole command a person can paste, with the references a person types (a
routine's name, an ID prefix) rather than whole IDs. `tests/maia/cli/test_help_examples.py`
parses every line with the real parser, so an example that stops parsing fails there.
"""

from __future__ import annotations

from typing import Final

import click

EXAMPLES: Final[dict[tuple[str, ...], tuple[str, ...]]] = {
    ("session", "wait"): (
        "maia session wait review --state idle --timeout 2m",
        "maia session wait review --activity waiting_approval --json",
    ),
    ("routine", "create"): (
        "maia routine create --name standup --cron '0 9 * * 1-5' --timezone Europe/Berlin "
        "--project-id myapp --prompt 'Summarize yesterday' --yes",
        "maia routine create --name standup --cron '0 9 * * 1-5' --timezone UTC "
        "--project-id myapp --prompt 'Summarize yesterday' --dry-run",
    ),
    ("routine", "list"): ("maia routine list --state active", "maia routine list --jsonl"),
    ("routine", "show"): ("maia routine show standup", "maia routine show 2fdc --json"),
    ("routine", "pause"): ("maia routine pause standup --expected-revision 1",),
    ("routine", "resume"): ("maia routine resume standup --expected-revision 2",),
    ("routine", "run"): (
        "maia routine run --routine-id standup --expected-revision 1 --yes",
        "maia routine run --routine-id standup --expected-revision 1 --command-id run-1 --yes",
    ),
    ("routine", "disable"): (
        "maia routine disable --routine-id standup --expected-revision 3 --yes",
    ),
    ("webhook", "add"): (
        "maia webhook add --url https://hooks.example/in --event turn.completed "
        "--event session.waiting_approval --secret-env MAIA_HOOK_SECRET --yes",
        "maia webhook add --url https://hooks.example/in --event '*' "
        "--secret-env MAIA_HOOK_SECRET --project-id myapp --dry-run",
    ),
    ("webhook", "list"): ("maia webhook list", "maia webhook list --include-removed --json"),
    ("webhook", "show"): ("maia webhook show 3fa2", "maia webhook show hook_3fa2 --json"),
    ("webhook", "remove"): ("maia webhook remove 3fa2 --yes",),
    ("webhook", "test"): ("maia webhook test 3fa2 --yes", "maia webhook test 3fa2 --dry-run"),
    ("webhook", "redeliver"): ("maia webhook redeliver dlv_0b41c2d3e4f5a6b7 --yes",),
    ("machine", "enroll"): (
        "maia machine enroll --name build-box --yes",
        "maia machine enroll --name build-box --dry-run",
    ),
    ("machine", "list"): ("maia machine list", "maia machine list --json"),
    ("machine", "show"): ("maia machine show build-box",),
    ("machine", "revoke"): ("maia machine revoke --name build-box --yes",),
    ("approval", "list"): (
        "maia approval list --state pending",
        "maia approval list --session-id review --json",
    ),
    ("approval", "show"): ("maia approval show 3fa2",),
    ("approval", "respond"): (
        "maia approval respond 3fa2 --decision allow",
        "maia approval respond 3fa2 --decision deny --message 'not on main'",
    ),
    ("observe", "events"): (
        "maia observe events --timeout 1m",
        'maia observe events --query \'{"domains": ["scheduler"]}\' --jsonl',
        "maia observe events --cursor c1.… --timeout 5m",
    ),
}


def epilog(path: tuple[str, ...]) -> str | None:
    """The `Examples:` block of a command's help (`\\b` keeps click from rewrapping it)."""
    lines = EXAMPLES.get(path)
    if not lines:
        return None
    return "\b\nExamples:\n" + "\n".join(f"  {line}" for line in lines)


def attach_examples(root: click.Group) -> None:
    """Give each command of the tree that has examples its epilog (only the commands built:
    the parser builds the branch a command line needs)."""
    for path in EXAMPLES:
        command: click.Command | None = root
        for name in path:
            command = command.commands.get(name) if isinstance(command, click.Group) else None
        if command is not None:
            command.epilog = epilog(path)
