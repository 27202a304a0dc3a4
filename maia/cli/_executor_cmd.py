"""`maia executor check NAME`: run an agent executor's version probe without a Node and say
what it found (the binary, its version, the version Maia was verified against, and any
problem: a missing binary, a version that lacks a flag the adapter uses, an ACP agent that
does not answer `initialize`). Exit 0 when the executor is usable, 2 otherwise."""

from __future__ import annotations

import json

import click

from ._config_cmd import _home


def _refuse(name: str, problem: str, as_json: bool) -> click.UsageError:
    """A usage error (exit 2); with --json also its one document on stdout, shaped like a
    probe that failed, so a program reading stdout is never left with nothing."""
    if as_json:
        click.echo(json.dumps({"executor": name, "ok": False, "problem": problem}))
    return click.UsageError(problem)


@click.command("check")
@click.argument("name")
@click.option("--home", metavar="PATH", help="The Maia home (default: $MAIA_HOME or ~/.maia).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
def check_command(name: str, home: str | None, as_json: bool) -> None:
    """Probe the executor NAME of config.jsonc (claude-code, codex or acp)."""
    from maia.config import load_user_config
    from maia.core import MaiaError
    from worker_bridge.workers.agents import MODULES, probe

    try:
        config = load_user_config(_home(home) / "config.jsonc")
    except MaiaError as error:
        raise click.ClickException(error.message) from error
    executor = config.executors.get(name)
    if executor is None:
        known = ", ".join(sorted(config.executors)) or "none"
        problem = f"no executor {name!r} in config.jsonc (configured: {known})"
        raise _refuse(name, problem, as_json)
    if executor.kind not in MODULES:
        kinds = ", ".join(sorted(MODULES))
        problem = f"executor {name!r} is {executor.kind}: only agent kinds probe ({kinds})"
        raise _refuse(name, problem, as_json)
    found = probe(executor.kind, executor.options, executor.argv)
    if as_json:
        click.echo(json.dumps({"executor": name, **found.as_dict()}))
    else:
        version = found.version or "unknown version"
        pinned = f" (verified: {found.pinned})" if found.pinned else ""
        where = found.path or "not found"
        click.echo(f"{name}: {found.kind} {where} {version}{pinned}")
        if found.problem:
            click.echo(f"problem: {found.problem}")
    if not found.ok:
        raise SystemExit(2)
