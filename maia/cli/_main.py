"""Entry point of the `maia` console script: parse, connect, execute, exit with a code.

Order matters (spec: Schema-only inspection): `--version` and `--schema` are answered from
the command path alone, before any configuration, credential, transport or Node; then the
line is parsed (`parse_invocation`, no I/O); local commands (`node start|stop`, `contract`,
`completion`, `console`, bare `maia`) run here; an op opens the SDK client and runs
`execute` under anyio's asyncio backend: the SDK and `execute` are anyio-only, and asyncio
imports in a fraction of trio's time (a short command is mostly start-up). Nothing imports
an event loop or the SDK until an op actually runs; an op never imports trio. A plain op
call (one question, one answer: `session list`, `node status`) runs on the SDK's blocking
client (`_quick.py`) and imports no event loop at all.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Sequence
from typing import Any

from maia import __version__

from ._schema_mode import MESSAGE_MAX, Refusal

# Commands loaded only when run (their imports are heavy: trio, prompt-toolkit), each a click
# command or a function `(args) -> exit code`. The console is named here, not imported: it
# imports the CLI, so the CLI reaches it only through this table.
SERVED_COMMANDS: dict[tuple[str, ...], str] = {
    ("node", "start"): "maia.cli._node_commands:start_command",
    ("node", "stop"): "maia.cli._node_commands:stop_command",
    ("node", "backup"): "maia.cli._node_commands:backup_command",
    ("config", "check"): "maia.cli._config_cmd:check_command",
    ("executor", "check"): "maia.cli._executor_cmd:check_command",
    ("console",): "maia.console._launch:open_console",
    ("home",): "maia.console._launch:home",
}
CONSOLE_MISSING = "maia: the console is not available in this build\n"
# `_completion.COMPLETE_VAR` (a test keeps them equal), named here so a run need not load it.
COMPLETE_VAR = "_MAIA_COMPLETE"


def _run_served(path: tuple[str, ...], args: Sequence[str]) -> int:
    import click

    module_name, _, attribute = SERVED_COMMANDS[path].partition(":")
    try:
        command = getattr(importlib.import_module(module_name), attribute)
    except ImportError:
        if not module_name.startswith("maia.console"):
            raise
        from ._home import NEXT_STEP

        sys.stderr.write(CONSOLE_MISSING + NEXT_STEP)
        return 1
    if not isinstance(command, click.Command):
        return int(command(list(args)))
    # -h as every other command takes it (click's default is --help alone).
    command.context_settings.setdefault("help_option_names", ["-h", "--help"])
    try:
        command.main(list(args), prog_name="maia " + " ".join(path), standalone_mode=False)
    except SystemExit as exit_:
        return exit_.code if isinstance(exit_.code, int) else 1
    return 0


def summary() -> str:
    """The version and a registry summary (ops by noun, protocol, digest)."""
    from collections import Counter

    from maia.protocol import PROTOCOL_VERSION, REGISTRY

    nouns = Counter(op.operation_id.split(".")[0] for op in REGISTRY)
    lines = [
        f"maia {__version__}",
        f"protocol {PROTOCOL_VERSION}",
        f"registry {REGISTRY.digest}",
        f"operations {len(REGISTRY)}: " + ", ".join(f"{n} {c}" for n, c in sorted(nouns.items())),
    ]
    return "\n".join(lines) + "\n"


def parse_line(args: Sequence[str]) -> Any:
    """One command line as an `Invocation`, after the rewrites a typed line gets (`config
    admit`'s stem, a pair stem's `--schema`): what `main` and the console both run."""
    from ._config_cmd import config_alias
    from ._invocation import parse_invocation
    from ._schema_mode import schema_alias

    return parse_invocation(schema_alias(config_alias(args)))


def _refuse(message: str, code: int = 2) -> int:
    sys.stderr.write(f"maia: {message[:MESSAGE_MAX]}\n")
    return code


def _usage_json(args: Sequence[str], error: Any) -> None:
    """With `--json`, a usage error is also the one error document on stdout (docs/cli.md:
    `--json` prints exactly one document), naming the flag when click knows it."""
    words = args[: args.index("--")] if "--" in args else args
    if "--json" not in words:
        return
    import json

    param = getattr(error, "param", None)
    opts = getattr(param, "opts", None) or []
    flag = opts[0] if opts and opts[0].startswith("-") else None
    hint = getattr(error, "param_hint", None)  # a BadParameter raised by our own parsers
    named = getattr(error, "path", None) or getattr(error, "option_name", None)  # NoSuchOption
    name = flag or named or (hint if isinstance(hint, str) else None)
    name = name or getattr(param, "human_readable_name", "")
    details = {"path": name} if name else {}
    message = error.format_message().split("\n")[0][:MESSAGE_MAX]
    envelope = {"ok": False, "error": {"code": "invalid_request", "message": message,
                                       "retryable": False, "details": details}}  # fmt: skip
    sys.stdout.write(json.dumps(envelope, sort_keys=True) + "\n")


def _interactive() -> bool:
    try:
        return sys.stdin.isatty() and sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def _run_local(invocation: Any) -> int:
    path, args = invocation.local, invocation.args
    if path in SERVED_COMMANDS:
        return _run_served(path, args)
    if path[0] == "contract":
        from ._contract_cmd import contract

        try:
            contract.main([*path[1:], *args], prog_name="maia contract", standalone_mode=False)
        except SystemExit as exit_:
            return exit_.code if isinstance(exit_.code, int) else 1
        return 0
    if path == ("version",):
        return _version(args)
    from ._output import Out, run_local

    return run_local(invocation, Out(sys.stdout, sys.stderr, "human"))


def _version(args: Sequence[str]) -> int:
    """The summary; `--schema` is refused, not run: `version` is no registered resource
    command (spec: schema mode never falls through to execution)."""
    from . import _exit
    from ._schema_mode import wants_schema

    if wants_schema(args):
        sys.stderr.write("maia: --schema inspects registered resource commands; version is not"
                         " one (see maia session show --schema)\n")  # fmt: skip
        return _exit.USAGE
    if args:
        sys.stderr.write("maia: version takes no arguments\n")
        return _exit.USAGE
    sys.stdout.write(summary())
    return 0


def _interrupted(invocation: Any) -> int:
    """Ctrl-C: exit 130. A `turn send --wait` stops waiting, not the turn, whose ID may not
    have come back yet: say so, and how to find it (its command's receipt names it)."""
    from . import _exit

    note = ""
    command_id = invocation.params.get("commandId")
    if invocation.operation_id == "turn.send" and invocation.wait and command_id:
        note = (
            "; the turn, if sent, goes on: `maia receipt get --command-id "
            f"{command_id} --operation-id turn.send` names it, `maia turn interrupt TURN` "
            "stops it"
        )
    sys.stderr.write(f"maia: interrupted{note}\n")
    return _exit.INTERRUPTED


def _run_op(invocation: object) -> int:
    from . import _exit
    from ._invocation import Invocation
    from ._quick import needs_execute, run_quick

    assert isinstance(invocation, Invocation)
    if not needs_execute(invocation):
        try:
            return run_quick(invocation, _interactive())
        except KeyboardInterrupt:
            return _interrupted(invocation)
    import anyio

    from maia.client import open_client
    from maia.core import MaiaError

    from ._execute import execute
    from ._output import Out

    async def run() -> int:
        try:
            async with open_client(invocation.node, home=invocation.home) as client:
                try:
                    return await execute(invocation, client, stdout=sys.stdout,
                                         stderr=sys.stderr, interactive=_interactive(),
                                         owns_sigint=True)  # fmt: skip
                finally:
                    from ._deprecated import report

                    report(client.deprecations, sys.stderr)  # the Node's, for old op names
        except MaiaError as error:
            Out(sys.stdout, sys.stderr, invocation.output).error(error)
            return _exit.exit_code(error)

    try:
        return anyio.run(run, backend="asyncio")
    except KeyboardInterrupt:
        return _interrupted(invocation)
    except BaseExceptionGroup as group:  # Ctrl-C met inside a task group
        if group.subgroup(KeyboardInterrupt) is None:
            raise
        return _interrupted(invocation)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the process exit code."""
    try:
        return _main(argv)
    except BrokenPipeError:  # `maia ... | head`: the reader left; say nothing more
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1


def _undecodable(args: Sequence[str]) -> str | None:
    """Why an argument is not text, or None. Python hands undecodable argv bytes over as
    lone surrogates (`surrogateescape`); nothing downstream (JSON, the terminal) takes them."""
    for index, arg in enumerate(args, start=1):
        try:
            arg.encode("utf-8")
        except UnicodeEncodeError as error:
            code = ord(arg[error.start])
            what = f"byte 0x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"U+{code:04X}"
            return (
                f"argument {index} is not valid UTF-8 ({what} at character {error.start}); "
                "pass text in UTF-8"
            )
    return None


def _main(argv: Sequence[str] | None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if (problem := _undecodable(args)) is not None:
        return _refuse(problem)
    if args == ["--version"]:  # fast path: no registry needed
        sys.stdout.write(f"maia {__version__}\n")
        return 0
    from ._lean import run_lean

    code = run_lean(args)  # a plain read such as `session list`: answered before click
    if code is not None:
        return code
    from ._attrs_cache import install

    install()  # before the first attrs class: its methods as compiled at install
    import click

    if os.environ.get(COMPLETE_VAR):
        from ._invocation import command_tree

        try:
            command_tree().main(args, prog_name="maia", complete_var=COMPLETE_VAR)
        except SystemExit as exit_:  # click exits after completing
            return exit_.code if isinstance(exit_.code, int) else 0
    from maia.protocol import REGISTRY

    from ._deprecated import report, rewrite_deprecated

    args, deprecated = rewrite_deprecated(args, REGISTRY.deprecations)
    report(deprecated, sys.stderr)
    try:
        invocation = parse_line(args)
    except Refusal as refusal:
        return _refuse(refusal.message)
    except click.UsageError as error:
        _usage_json(args, error)
        return _refuse(error.format_message().split("\n")[0])
    except click.ClickException as error:
        return _refuse(error.format_message(), 1)
    if invocation.local:
        try:
            return _run_local(invocation)
        except click.UsageError as error:
            return _refuse(error.format_message().split("\n")[0])
        except click.ClickException as error:
            return _refuse(error.format_message(), 1)
    return _run_op(invocation)
