"""Entry point of the `maia` console script: a click tree projected from the registry.

Every registered op is a command `maia <noun> <verb>` (`turn.queue.list` is `maia turn queue
list`). For now a command serves only `--schema`; running it says so (later issues connect
it to the Node). No argument prints the version and a registry summary. Imports stay lazy:
nothing here imports trio, and the registry is read only when a command path needs it.
"""

from __future__ import annotations

import importlib
import sys
from collections import Counter
from collections.abc import Sequence

import click

from maia import __version__

from ._schema_mode import MESSAGE_MAX, Refusal, parse_schema_tokens, render_schema, wants_schema

# Commands served by other packages, loaded only when run (their imports may be heavy: trio).
# A path that is also an op keeps `--schema`; without it the served command runs.
SERVED_COMMANDS: dict[tuple[str, ...], str] = {
    ("node", "start"): "maia.node._commands:start_command",
    ("node", "status"): "maia.node._commands:status_command",
    ("node", "stop"): "maia.node._commands:stop_command",
}


def _run_served(path: tuple[str, ...], args: Sequence[str]) -> None:
    module_name, _, attribute = SERVED_COMMANDS[path].partition(":")
    command: click.Command = getattr(importlib.import_module(module_name), attribute)
    command.main(list(args), prog_name="maia " + " ".join(path), standalone_mode=False)


def _served_command(path: tuple[str, ...]) -> click.Command:
    @click.pass_context
    def run(ctx: click.Context, args: tuple[str, ...]) -> None:
        _run_served(path, args)

    return click.Command(
        name=path[-1],
        callback=run,
        help=f"maia {' '.join(path)} (see --help).",
        params=[click.Argument(["args"], nargs=-1, type=click.UNPROCESSED)],
        context_settings={"ignore_unknown_options": True, "help_option_names": []},
    )


def summary() -> str:
    """The version and a registry summary (ops by noun, protocol, digest)."""
    from maia.protocol import PROTOCOL_VERSION, REGISTRY

    nouns = Counter(op.operation_id.split(".")[0] for op in REGISTRY)
    lines = [
        f"maia {__version__}",
        f"protocol {PROTOCOL_VERSION}",
        f"registry {REGISTRY.digest}",
        f"operations {len(REGISTRY)}: " + ", ".join(f"{n} {c}" for n, c in sorted(nouns.items())),
    ]
    return "\n".join(lines) + "\n"


def _op_command(verb: str, operation_id: str, summary_text: str) -> click.Command:
    path = tuple(operation_id.split("."))

    @click.pass_context
    def run(ctx: click.Context, args: tuple[str, ...]) -> None:
        # click drops `--`; the raw line decides whether `--schema` came before it.
        raw = (ctx.find_root().obj or {}).get("argv", args)
        if not wants_schema(raw) or not wants_schema(args):
            if path in SERVED_COMMANDS:
                _run_served(path, args)
                return
            raise click.ClickException(
                f"{operation_id} is registered but not served by this CLI yet "
                f"(try: --schema or --schema=input)"
            )
        which = parse_schema_tokens(args)
        sys.stdout.write(render_schema(operation_id, which))

    return click.Command(
        name=verb,
        callback=run,
        help=f"{summary_text}\n\nOperation {operation_id}. --schema prints its output JSON "
        "Schema, --schema=input its input schema.",
        params=[click.Argument(["args"], nargs=-1, type=click.UNPROCESSED)],
        context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False},
    )


def build_cli() -> click.Group:
    """The click tree: one command per registered op, plus `contract`."""
    from maia.protocol import REGISTRY

    from ._contract_cmd import contract

    @click.group(name="maia", invoke_without_command=True)
    @click.option("--version", is_flag=True, help="Print the version and exit.")
    @click.pass_context
    def root(ctx: click.Context, version: bool) -> None:
        """Maia: a local node service that runs AI-agent Sessions in supervised workers."""
        if version:
            click.echo(f"maia {__version__}")
        elif ctx.invoked_subcommand is None:
            sys.stdout.write(summary())

    root.add_command(contract)
    for op in REGISTRY:
        *path, verb = op.operation_id.split(".")
        group: click.Group = root
        for noun in path:
            found = group.commands.get(noun)
            if not isinstance(found, click.Group):
                found = click.Group(name=noun, help=f"{noun} operations.")
                group.add_command(found)
            group = found
        group.add_command(_op_command(verb, op.operation_id, op.summary))
    for served in SERVED_COMMANDS:
        group = root
        for noun in served[:-1]:
            found = group.commands.get(noun)
            if not isinstance(found, click.Group):
                found = click.Group(name=noun, help=f"{noun} commands.")
                group.add_command(found)
            group = found
        if served[-1] not in group.commands:
            group.add_command(_served_command(served))
    return root


def _refuse(message: str, code: int = 2) -> int:
    sys.stderr.write(f"maia: {message[:MESSAGE_MAX]}\n")
    return code


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the process exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args == ["--version"]:  # fast path: no registry needed
        sys.stdout.write(f"maia {__version__}\n")
        return 0
    try:
        result = build_cli().main(
            args, prog_name="maia", standalone_mode=False, obj={"argv": tuple(args)}
        )
    except Refusal as refusal:
        return _refuse(refusal.message)
    except click.UsageError as error:
        return _refuse(error.format_message().split("\n")[0])
    except click.ClickException as error:
        return _refuse(error.format_message(), 1)
    except click.Abort:
        return _refuse("aborted", 130)
    except SystemExit as exit_:
        return exit_.code if isinstance(exit_.code, int) else 1
    return result if isinstance(result, int) else 0
