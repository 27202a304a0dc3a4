"""`python -m maia.console [--home DIR] [--node URL]`: the console without the CLI around it."""

from __future__ import annotations

import sys

import click

from ._app import run_console


@click.command("console")
@click.option("--home", default=None, help="The Node's home (default: $MAIA_HOME or ~/.maia).")
@click.option("--node", "url", default=None, help="The Node's URL (default: discovery file).")
def main(home: str | None, url: str | None) -> None:
    """Open the interactive console on the running Node."""
    sys.exit(run_console(home=home, url=url))


if __name__ == "__main__":
    main()
