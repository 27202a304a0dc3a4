"""The lean entry of `python -m maia.node`: the Node's own start never imports click.

The detached Node (`maia node start --detach`) and `./dev run` start as
`python -P -m maia.node start --home H [--port N]`. That exact shape, with values click would
accept, runs the Node here; any other command line (help, a bad value, the machine flags,
`--detach`, `status`, `stop`, `backup`) goes to the CLI's click group, so help and errors
stay click's, word for word. Keeping click and `maia.cli` out of the Node saves their
memory for its whole life.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

_PORT_MAX = 65535


def lean_start(argv: Sequence[str]) -> tuple[Path | None, int] | None:
    """(home, port) when `argv` is `start` with only valid `--home`/`--port`, else None."""
    if not argv or argv[0] != "start":
        return None
    values: dict[str, str] = {}
    rest = list(argv[1:])
    while rest:
        flag, sep, value = rest.pop(0).partition("=")
        if flag not in ("--home", "--port") or flag in values:
            return None  # another flag, or one given twice: click decides
        if not sep:
            if not rest:
                return None
            value = rest.pop(0)
        values[flag] = value
    port_text = values.get("--port", "0")
    if not (port_text.isascii() and port_text.isdigit()) or not 0 <= int(port_text) <= _PORT_MAX:
        return None
    home_text = values.get("--home")
    if home_text is None:
        return None, int(port_text)
    if not home_text or home_text.startswith("-") or Path(home_text).is_file():
        return None  # click's messages for these (a file is not a folder)
    return Path(home_text), int(port_text)


def run_lean(argv: Sequence[str]) -> int | None:
    """Run the Node for `python -m maia.node ARGV` when ARGV is the lean start (its exit
    status); None for every other command line, which is the CLI's click group's (run by
    `__main__`, an entry script: no module of `maia.node` imports the CLI)."""
    lean = lean_start(argv)
    if lean is None:
        return None
    from ._foreground import run_foreground
    from ._home import NodeHome

    home, port = lean
    return run_foreground(NodeHome.resolve(home), port)
