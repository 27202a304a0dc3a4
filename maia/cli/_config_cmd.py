"""`maia config check` (local, no Node), `maia config admit` (the admission pair as one
command) and the human rendering of `maia config show`.

`config check` reads the files the Node would admit (the user file, and the Project file of
every Project in the inventory mirror, of the current directory and of each `--root`), and
prints every problem as `file:line:column: key: what`; exit 0, or 2 when anything is wrong.
It starts no Node and admits nothing.

`maia config admit [--project-id P] [--yes] [--dry-run]` is `config admit confirm` (preview,
show the diff, ask, confirm; `--yes` confirms without asking) or, with `--dry-run`,
`config admit preview` (the diff only): an alias on the command line, so the registry's
generic preview → confirm flow does the work.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

_YES = ("--yes", "-y")


def config_alias(args: Sequence[str]) -> list[str]:
    """`config admit [flags]` → `config admit confirm|preview [flags]`; others unchanged."""
    if list(args[:2]) != ["config", "admit"]:
        return list(args)
    rest = list(args[2:])
    if rest and not rest[0].startswith("-"):
        return list(args)  # `config admit preview|confirm ...`: the ops themselves
    if "--help" in rest or "-h" in rest:
        return list(args)
    from ._schema_mode import wants_schema

    if wants_schema(rest):  # schema mode's own rewrite, which refuses --yes (this drops it)
        return list(args)
    if "--dry-run" in rest:  # the preview takes neither --yes nor --command-id: drop them,
        flags: list[str] = []  # as every pair's stem does with --dry-run
        skip = False
        for arg in rest:
            if skip:
                skip = False
            elif arg == "--command-id":
                skip = True
            elif arg != "--dry-run" and arg not in _YES and not arg.startswith("--command-id="):
                flags.append(arg)
        return ["config", "admit", "preview", *flags]
    return ["config", "admit", "confirm", *rest]


def _home(explicit: str | None) -> Path:
    if explicit:
        return Path(explicit).expanduser().absolute()
    from_env = os.environ.get("MAIA_HOME")
    return Path(from_env).expanduser().absolute() if from_env else Path.home() / ".maia"


class _CheckCommand(click.Command):
    """With `--json`, a usage error (`--bogus`, an extra word) is also the one error document
    on stdout, as for every other command (docs/cli.md)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        given = list(args)  # click's parser consumes the list
        try:
            return super().parse_args(ctx, args)
        except click.UsageError as error:
            from ._main import _usage_json

            _usage_json(given, error)
            raise


@click.command("check", cls=_CheckCommand)
@click.option("--home", metavar="PATH", help="The Maia home (default: $MAIA_HOME or ~/.maia).")
@click.option("--root", "roots", multiple=True, metavar="PATH",
              help="Also check this Project root's .maia/config.jsonc (repeatable).")  # fmt: skip
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
def check_command(home: str | None, roots: tuple[str, ...], as_json: bool) -> None:
    """Check every configuration file at once; exit 2 listing each problem (no Node)."""
    from maia.config import check_configuration

    extra = list(roots)
    if (Path.cwd() / ".maia" / "config.jsonc").exists():
        extra.append(str(Path.cwd()))
    report = check_configuration(str(_home(home)), extra)
    if as_json:
        document = {"ok": not report.problems, "checked": list(report.checked),
                    "problems": [p.to_json() for p in report.problems]}  # fmt: skip
        sys.stdout.write(json.dumps(document, sort_keys=True) + "\n")
    else:
        for problem in report.problems:
            sys.stdout.write(f"{problem}\n")
        count = len(report.problems)
        summary = f"{count} problem{'s' if count != 1 else ''}" if count else "ok"
        sys.stderr.write(f"maia: {summary} in {len(report.checked)} file(s) checked\n")
    if report.problems:
        raise SystemExit(2)


def _value(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _snapshot_unreadable(status: dict[str, Any]) -> bool:
    """Whether the scope differs because its admitted snapshot cannot be read (the Node's
    problem naming the database), not because its file was edited."""
    from maia.config import UNREADABLE_SNAPSHOT

    return any(p.get("path") == "$" and UNREADABLE_SNAPSHOT in p.get("detail", "")
               for p in status.get("problems", []))  # fmt: skip


def _where(problem: dict[str, Any]) -> str:
    """`file:line:column`, or the file alone for a problem of the file as a whole (a
    symlink, not a regular file), as `config check` prints it."""
    if problem.get("line") is None:
        return str(problem["source"])
    return f"{problem['source']}:{problem['line']}:{problem.get('column', 1)}"


def render_config_show(result: dict[str, Any]) -> str:
    """`maia config show`: each file's state, then `key  value  (source)` lines."""
    from maia.config import EFFECTIVE_ALIASES

    lines: list[str] = []
    for status in (result.get("user"), result.get("project")):
        if not status:
            continue
        state = status["file"]
        note = {"differs": "edited since admitted: `maia config admit` to apply",
                "never-admitted": "never admitted", "invalid": "has problems (below)",
                "admitted": "admitted"}[state]  # fmt: skip
        if state == "differs" and _snapshot_unreadable(status):
            note = "the admitted snapshot cannot be read: `maia config admit` (below) mends it"
        lines.append(f"{status['scope']} file  {status['source']}  {note}, revision "
                     f"{status['revision']}")  # fmt: skip
        lines += [f"  {_where(p)}: {p['path']}: {p['detail']}"
                  for p in status.get("problems", [])]  # fmt: skip
    effective = result.get("effective") or {}
    rows: list[tuple[str, str, str]] = []
    for key, entry in sorted(effective.items()):
        if key == "executors" or EFFECTIVE_ALIASES.get(key) in effective:
            continue  # an old name beside the file's (an older Node sends only the old one)
        if isinstance(entry, dict) and "value" in entry:
            rows.append((key, _value(entry["value"]), entry["source"]))
        elif isinstance(entry, dict):
            rows += [(f"{key}.{k}", _value(v["value"]), v["source"]) for k, v in entry.items()]
    rows += [(f"executor {e['ref']}", e["kind"], e["source"])
             for e in effective.get("executors", [])]  # fmt: skip
    width = max((len(k) for k, _, _ in rows), default=0)
    value_width = max((len(v) for _, v, _ in rows), default=0)
    lines += [f"{k.ljust(width)}  {v.ljust(value_width)}  ({s})" for k, v, s in rows]
    return "\n".join(lines) + "\n"
