"""Bare `maia` (the README's first command) and `maia console`.

`maia` with no arguments makes sure a Node runs on the embedded default (`$MAIA_HOME` or
`~/.maia`): if none does, it starts one detached (`maia node start --detach`) and says so on
stderr. Then it opens the console on a terminal; without a terminal, or when the console
cannot be imported, it prints the one next command instead.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

NEXT_STEP = "next: maia session create --title hello && maia turn send hello 'Hi!' --wait\n"


def _node_running() -> bool:
    from maia.client import find_live_node
    from maia.protocol import MaiaError

    try:
        find_live_node()
    except MaiaError:
        return False
    return True


def ensure_node() -> int:
    """Start a detached Node on the default home unless one runs; 0 when one runs after."""
    if _node_running():
        return 0
    sys.stderr.write("maia: no Node is running; starting one (maia node start --detach)\n")
    from ._main import _run_served

    return _run_served(("node", "start"), ["--detach"])


CONSOLE_USAGE = "maia: usage: maia console [--home DIR] [--node URL]\n"


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
    try:
        from maia.console import run_console
    except ImportError:
        sys.stderr.write("maia: the console is not available in this build\n" + NEXT_STEP)
        return 1
    return int(run_console(**options))


def home(args: Sequence[str]) -> int:
    """Bare `maia`: a Node on the default home, then the console (or the next command)."""
    code = ensure_node()
    if code != 0:
        return code
    from ._main import _interactive

    if not (_interactive() and sys.stdout.isatty()):
        sys.stderr.write("maia: a Node is running. " + NEXT_STEP)
        return 0
    return open_console(args)
