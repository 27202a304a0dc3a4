"""Bare `maia` (the README's first command) and `maia console`, served to the CLI.

`maia` with no arguments makes sure a Node runs on the embedded default (`ensure_node`), then
opens the console on a terminal; without a terminal it prints the one next command instead.
The CLI runs these through its served-command table (`maia.cli._main.SERVED_COMMANDS`), so the
console imports the CLI and the CLI never imports the console.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from maia.cli._home import NEXT_STEP, ensure_node

CONSOLE_USAGE = "maia: usage: maia console [--home DIR] [--node URL]\n"
STDIN_CLOSED = (
    "maia console: stdin is closed; the console reads commands from a terminal "
    "(in a script, run `maia COMMAND` instead)\n"
)


def _console_options(args: Sequence[str]) -> dict[str, str] | None:
    """`--home DIR` and `--node URL` (also `--opt=value`); None for anything else."""
    options: dict[str, str] = {}
    names = {"--home": "home", "--node": "url"}
    rest = list(args)
    while rest:
        word = rest.pop(0)
        name, equals, value = word.partition("=")
        if name not in names or names[name] in options:
            return None
        if not equals:
            if not rest:
                return None
            value = rest.pop(0)
        if not value:
            return None
        options[names[name]] = value
    return options


def open_console(args: Sequence[str]) -> int:
    """`maia console [--home DIR] [--node URL]`: the interactive console, or the next command."""
    options = _console_options(args)
    if options is None:
        sys.stderr.write(CONSOLE_USAGE)
        return 2
    if sys.stdin is None:  # started with descriptor 0 closed (`<&-`): nothing to read from
        sys.stderr.write(STDIN_CLOSED)
        return 2
    from ._app import run_console

    return int(run_console(**options))


def home(args: Sequence[str]) -> int:
    """Bare `maia`: a Node on the default home, then the console (or the next command)."""
    code = ensure_node()
    if code != 0:
        return code
    from maia.cli._main import _interactive

    if not (_interactive() and sys.stdout.isatty()):
        sys.stderr.write("maia: a Node is running. " + NEXT_STEP)
        return 0
    return open_console(args)
