"""One command line, parsed: `parse_invocation(argv) -> Invocation`, with no I/O at all.

The CLI and the console share this split. Parsing is pure click over the tree that
`command_tree()` projects from the registry (every op is `maia <noun> <verb>`, e.g.
`turn.queue.list` is `maia turn queue list`); running it is `execute` (see `_execute.py`).

    @attrs.frozen
    class Invocation:
        operation_id: str | None   # the op to call; None for a local command
        params: dict[str, Any]     # the op's wire input before reference resolution
        references: dict[str, str] # wire field -> "session" | "project" | "turn", to resolve
        output: "human" | "json" | "jsonl"
        wait, follow, yes: bool    # --wait (turn send), --follow (events read), --yes
        full: bool                 # --full (turn show: every item page)
        timeout_s: float | None    # --timeout 30s (waits and follows)
        text_file: str | None      # turn send --file PATH (`-`: stdin), read by `execute`
        node, home: str | None     # --node URL, --home PATH (which Node to talk to)
        local: tuple[str, ...]     # a local command's path: ("node", "start"), ("completion",),
                                   # ("help",), ("schema",), ("console",), ("home",) [bare maia]
        args: tuple[str, ...]      # a local command's remaining arguments
        text: str                  # the help text of ("help",)

`parse_invocation` raises `click.UsageError` (exit 2) with a one-line message, and
`schema_mode.Refusal` for a refused `--schema` line.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any, Final, Literal

import attrs
import click

from ._flags import FROM_FILE, op_params, reference_fields, takes_command_id, wire_params
from ._pairs import pair_params, pairs
from ._schema_mode import MESSAGE_MAX, parse_schema_tokens, wants_schema

Output = Literal["human", "json", "jsonl"]
# Commands that run without an op: (path) -> help line. Their arguments are passed through.
LOCAL_COMMANDS: Final[dict[tuple[str, ...], str]] = {
    ("node", "start"): "Start the local Node (in the foreground unless --detach).",
    ("node", "stop"): "Stop the running Node gracefully.",
    ("node", "backup"): "Copy the Node's database to a new file (SQLite's backup API).",
    ("completion",): "Print a shell completion script (bash, zsh or fish).",
    ("console",): "Open the interactive console.",
    ("version",): "Print the version, protocol, registry digest and operations.",
    ("contract", "generate"): "Rewrite the registry's generated projections.",
    ("contract", "check"): "Check the registry's generated projections.",
    ("contract", "fixtures", "verify"): "Run every op's fixtures against a real Node.",
    ("config", "check"): "Check every configuration file: each problem with its line (no Node).",
    ("executor", "check"): "Probe an agent executor's binary and version (no Node).",
}
# Op commands with runtime flags beyond --json/--jsonl/--node.
WAITS: Final = frozenset({"turn.send"})
FULLS: Final = frozenset({"turn.show"})
FOLLOWS: Final = frozenset({"events.read"})
TIMED: Final = frozenset(
    {"turn.send", "session.wait", "turn.wait", "events.read", "session.attach", "observe.events"}
)
STREAMS: Final = frozenset({"session.attach", "observe.events"})  # no one document: no --json
_TIMEOUT_HELP: Final = {
    "turn.send": "With --wait: give up after this long (30s, 2m; default 10m): exit 3.",
    "session.wait": "Give up after this long (30s, 2m; default 60s): exit 3.",
    "turn.wait": "Give up after this long (30s, 2m; default 60s): exit 3.",
    "events.read": "With --follow: stop after this long (exit 0).",
    "session.attach": "Stop following after this long (exit 0).",
    "observe.events": "Stop following after this long (exit 0).",
}
# What each group is for, as `maia --help` lists it (a group not named: "<name> commands.").
GROUP_HELP: Final[dict[str, str]] = {
    "approval": "Answer what an agent asks before it acts.",
    "config": "Show, check and admit the configuration.",
    "contract": "The registry's generated files and op fixtures (developers).",
    "events": "Read the Node's event journal, or follow it.",
    "executor": "Check an agent executor's binary (no Node needed).",
    "machine": "Enroll, show and revoke Execution Nodes.",
    "node": "Start, stop, greet, check and back up the local Node.",
    "observe": "Follow the Node's observations live.",
    "project": "Projects: the folders Sessions work in.",
    "receipt": "Read the receipts that mutations leave.",
    "reference": "Resolve an ID prefix, a title or a key to one ID.",
    "routine": "Scheduled Sessions: create, pause, resume, run, disable.",
    "session": "Create, list, wait for, stop, archive Sessions.",
    "turn": "Send prompts to a Session; follow or stop its turns.",
    "queue": "A Session's queued turns, in dispatch order.",
    "fixtures": "Each op's fixtures, run against a real Node.",
    "webhook": "Add, show, test and remove webhooks (the easy form).",
    "webhooks": "The webhook ops as registered ('maia webhook' is easier).",
}
# What the CLI adds to an op's summary (the op answers within 4 s; the CLI repeats it).
_CLI_NOTES: Final[dict[str, str]] = {
    "session.wait": "The CLI repeats the call until a match or --timeout (default 60s); "
    "--wait-milliseconds bounds each call. A stopped or failed Session never changes: "
    "a wait for another state ends at once, exit 5.",
    "turn.wait": "The CLI repeats the call until the turn ends (or reaches --state) or "
    "--timeout (default 60s).",
}
_DURATION = re.compile(r"^(\d+(?:\.\d+)?)(ms|s|m|h)?$")
_UNITS: Final = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, None: 1.0}


@attrs.frozen
class Invocation:
    """One parsed command line (see the module docstring for each field)."""

    operation_id: str | None
    params: dict[str, Any] = attrs.field(factory=dict)
    references: dict[str, str] = attrs.field(factory=dict)
    output: Output = "human"
    wait: bool = False
    follow: bool = False
    full: bool = False  # turn show --full: follow the item pages, print every item whole
    timeout_s: float | None = None
    yes: bool = False
    node: str | None = None
    home: str | None = None
    command_id_generated: bool = False
    text_file: str | None = None
    dry_run: bool = False  # a consequential pair at its stem: print only the preview
    local: tuple[str, ...] = ()
    args: tuple[str, ...] = ()
    text: str = ""


class _Done(Exception):
    """Raised by a callback to hand its Invocation back through click without exiting."""

    def __init__(self, invocation: Invocation) -> None:
        super().__init__()
        self.invocation = invocation


class NamedUsageError(click.UsageError):
    """A usage error of the CLI's own that names the flag or argument (`details.path`)."""

    def __init__(self, message: str, path: str) -> None:
        super().__init__(message)
        self.path = path


def parse_duration(text: str) -> float:
    """Seconds from `30s`, `500ms`, `2m`, `1h` or a bare number of seconds.

    Raises click.BadParameter.
    """
    match = _DURATION.match(text.strip())
    if match is None:
        raise click.BadParameter(
            "expects a duration such as 30s, 500ms or 2m", param_hint="--timeout"
        )
    return float(match.group(1)) * _UNITS[match.group(2)]


def _help_option() -> click.Option:
    def show(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
        if value and not ctx.resilient_parsing:
            raise _Done(Invocation(None, local=("help",), text=ctx.get_help()))

    return click.Option(
        ["--help", "-h"], is_flag=True, expose_value=False, is_eager=True, callback=show,
        help="Show this message and exit.",
    )  # fmt: skip


def _runtime_options(operation_id: str, confirm: bool) -> list[click.Parameter]:
    options: list[click.Parameter] = [
        click.Option(["--json", "as_json"], is_flag=True, help="Print one JSON document."),
        click.Option(["--jsonl", "as_jsonl"], is_flag=True, help="Print one JSON object a line."),
        click.Option(["--node"], metavar="URL", help="The Node's ws:// URL (default: "
                     "$MAIA_NODE, else the running Node of the home)."),
        click.Option(["--home"], metavar="PATH",
                     help="The Node's home (default: $MAIA_HOME or ~/.maia)."),
        click.Option(
            ["--schema"], is_flag=False, flag_value="output", metavar="[=input]",
            help="Print the op's output (or =input) JSON Schema, offline.",
        ),
    ]  # fmt: skip
    extra: list[tuple[bool, list[str], dict[str, Any]]] = [
        (operation_id in WAITS, ["--wait"], {"help": "Stream the reply; exit with the outcome."}),
        (operation_id in FOLLOWS, ["--follow", "-f"], {"help": "Keep printing new events."}),
        (operation_id in FULLS, ["--full"], {"help": "Follow the item pages; print every item."}),
        (
            operation_id in FOLLOWS,
            ["--after"],
            {"metavar": "CURSOR", "help": "Start after this cursor (from an earlier read)."},
        ),
        (
            operation_id in TIMED,
            ["--timeout"],
            {"metavar": "DURATION", "help": _TIMEOUT_HELP.get(operation_id, "")},
        ),
        (
            operation_id in FROM_FILE,
            ["--file"],
            {"metavar": "PATH", "help": "Read the prompt from a file instead (-: stdin)."},
        ),
        (confirm, ["--yes", "-y"], {"help": "Confirm without asking."}),
    ]
    for wanted, names, settings in extra:
        if wanted:
            if "metavar" not in settings:
                settings = {**settings, "is_flag": True}
            # A valued option is left to click's default: an explicit is_flag=False makes its
            # value optional, and then `--timeout -1s` read `-1s` as an option.
            options.append(click.Option(names, **settings))
    return options


def _op_callback(operation_id: str, pair: bool = False) -> Callable[..., None]:
    from maia.protocol import REGISTRY

    from ._pairs import pair_wire

    op = REGISTRY.get(operation_id)
    assert op is not None

    def run(**values: Any) -> None:
        dry_run = bool(values.pop("dry_run", False))
        as_json, as_jsonl = values.pop("as_json", False), values.pop("as_jsonl", False)
        if as_json and as_jsonl:
            raise NamedUsageError("--json and --jsonl exclude each other", "--jsonl")
        output: Output = "json" if as_json else "jsonl" if as_jsonl else "human"
        if as_json and (values.get("follow") or operation_id in STREAMS):
            # a stream has no one document to print: it used to print JSON lines anyway
            raise NamedUsageError(
                "--json prints one document and this streams: use --jsonl", "--json"
            )
        timeout = values.get("timeout")
        after = values.get("after")
        params = pair_wire(op, values) if pair else wire_params(op, values)
        if after is not None:
            if "position" in params:  # one would silently win over the other
                raise NamedUsageError(
                    "--after and --position exclude each other (--after CURSOR is the position"
                    ' {"kind": "cursor", "cursor": CURSOR})',
                    "--after",
                )
            params["position"] = {"kind": "cursor", "cursor": after}
        elif operation_id == "events.read" and "position" not in params:
            params["position"] = {"kind": "start"}
        text_file = _text_file(operation_id, values.get("file"), params)
        _absolute_root(operation_id, params)
        generated = False
        # Generated only where it is an idempotency key; where it is a look-up key
        # (`receipt get --command-id`) inventing one would change what is asked.
        if takes_command_id(op) and op.idempotency == "required" and "commandId" not in params:
            from maia.core import new_id

            params["commandId"], generated = new_id("command"), True
        references: dict[str, str] = {w: k for w, k in reference_fields(op).items() if w in params}
        if pair:
            from ._pairs import pair_references

            references.update(pair_references(op, params))
        raise _Done(
            Invocation(
                operation_id,
                params=params,
                references=references,
                output=output,
                wait=bool(values.get("wait")),
                follow=bool(values.get("follow")),
                full=bool(values.get("full")),
                timeout_s=parse_duration(timeout) if timeout is not None else None,
                yes=bool(values.get("yes")),
                node=values.get("node"),
                home=values.get("home"),
                command_id_generated=generated,
                text_file=text_file,
                dry_run=dry_run,
            )
        )

    return run


# Ops whose `rootPath` names a folder: typed relative, it means one under the current folder.
_ROOT_PATH_OPS: Final = frozenset(
    {"project.add", "project.relocate.preview", "project.relocate.confirm"}
)


def _absolute_root(operation_id: str, params: dict[str, Any]) -> None:
    """Join a relative `rootPath` to the current directory (the API takes absolute roots
    only: `maia project add .` would otherwise be refused with `must match ^/`)."""
    root = params.get("rootPath")
    if operation_id in _ROOT_PATH_OPS and isinstance(root, str) and root and root[0] != "/":
        import os

        params["rootPath"] = os.path.normpath(os.path.join(os.getcwd(), root))


def _text_file(operation_id: str, path: str | None, params: dict[str, Any]) -> str | None:
    """The `--file` of an op whose text field may come from a file; exactly one of the two.

    Raises click.UsageError when both or neither are given."""
    field = FROM_FILE.get(operation_id)
    if field is None:
        return None
    wire = field.upper()
    if path is not None and field in params:
        raise NamedUsageError(f"give {wire} or --file PATH, not both", wire)
    if path is None and field not in params:
        raise NamedUsageError(f"missing argument {wire} (or --file PATH, - for stdin)", wire)
    return path


def _shortcut_command(shortcut: Any) -> click.Command:
    """A `_shortcuts.Shortcut` as a click command: its flags, the op's runtime flags (not
    --schema), --command-id, and --dry-run for a confirm (which then calls the preview)."""
    from maia.protocol import REGISTRY

    from ._shortcuts import preview_id_of

    op = REGISTRY.get(shortcut.operation_id)
    assert op is not None
    confirm = op.confirmation == "required"

    def run(**values: Any) -> None:
        as_json, as_jsonl = values.pop("as_json", False), values.pop("as_jsonl", False)
        if as_json and as_jsonl:
            raise NamedUsageError("--json and --jsonl exclude each other", "--jsonl")
        output: Output = "json" if as_json else "jsonl" if as_jsonl else "human"
        dry_run = bool(values.pop("dry_run", False))
        params = shortcut.build(values)
        generated = False
        if takes_command_id(op):
            from maia.core import new_id

            params["commandId"] = values.get("command_id") or new_id("command")
            generated = values.get("command_id") is None
        operation_id = (preview_id_of(op.operation_id) if dry_run else None) or op.operation_id
        raise _Done(
            Invocation(operation_id, params=params, output=output, yes=bool(values.get("yes")),
                       node=values.get("node"), home=values.get("home"),
                       command_id_generated=generated, references=dict(shortcut.references))
        )  # fmt: skip

    extra: list[click.Parameter] = []
    if takes_command_id(op):
        extra.append(click.Option(["--command-id"], help="Idempotency key (default: new)."))
    if confirm:
        dry = "Preview only: show what it would do, change nothing."
        extra.append(click.Option(["--dry-run"], is_flag=True, help=dry))
    runtime = [p for p in _runtime_options(op.operation_id, confirm) if p.name != "schema"]
    return click.Command(
        name=shortcut.path[-1], callback=run,
        help=f"{shortcut.help}\n\nOperation {op.operation_id}.",
        params=[_help_option(), *shortcut.params(), *extra, *runtime], add_help_option=False,
    )  # fmt: skip


def _local_callback(path: tuple[str, ...]) -> Callable[..., None]:
    def run(args: tuple[str, ...]) -> None:
        raise _Done(Invocation(None, local=path, args=tuple(args)))

    return run


class _Noun(click.Group):
    """A group of commands whose refusal of an unknown word says what the group takes: its
    commands, or, for a pair command (`maia routine run`), that its fields are options."""

    fields: tuple[str, ...] = ()  # a pair command's field options (`_attach_pair`)

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        name = args[0]
        if (not ctx.resilient_parsing and not name.startswith("-")
                and self.get_command(ctx, name) is None):  # fmt: skip
            ctx.fail(self._unknown(ctx, name))
        return super().resolve_command(ctx, args)

    def _unknown(self, ctx: click.Context, name: str) -> str:
        path = ctx.command_path
        if self.fields:
            shown = ", ".join(self.fields[:4]) + (", …" if len(self.fields) > 4 else "")
            return (f"No such command {name!r}: `{path}` takes its fields as options ({shown});"
                    f" `{path} --help` lists them.")  # fmt: skip
        commands = self.list_commands(ctx)
        if not commands:
            return f"No such command {name!r}."
        listed = f"No such command {name!r}; `{path}` has: {', '.join(commands)}."
        if len(listed) <= MESSAGE_MAX:  # a refusal is one line of at most this many
            return listed
        return f"No such command {name!r}; `{path} --help` lists its commands."


def _group(name: str, help_text: str) -> _Noun:
    @click.pass_context
    def run(ctx: click.Context) -> None:
        if ctx.invoked_subcommand is None:
            local = ("home",) if ctx.parent is None else ("help",)
            raise _Done(Invocation(None, local=local, text=ctx.get_help()))

    return _Noun(
        name=name, callback=run, help=help_text, invoke_without_command=True,
        add_help_option=False, params=[_help_option()],
    )  # fmt: skip


def _child(parent: click.Group, name: str) -> _Noun:
    found = parent.commands.get(name)
    if not isinstance(found, _Noun):
        found = _group(name, GROUP_HELP.get(name, f"{name} commands."))
        parent.add_command(found)
    return found


def command_tree(prefix: tuple[str, ...] = (), shallow: bool = False) -> click.Group:
    """The grammar as click objects (for parsing, help and shell completion): the whole of
    it, or only the commands whose path starts with `prefix` (all a line starting with those
    words can reach: the registry then imports only those ops). `shallow`: only the root's
    own children, each noun an empty group (all a line naming no command can reach: `maia`,
    `maia --help`, an unknown command), so no op is loaded at all.

    Each op command's callback raises an internal signal carrying its Invocation; use
    `parse_invocation` rather than invoking the tree.
    """
    from maia.protocol import REGISTRY

    root = _group("maia", "Maia: a local Node that runs AI-agent Sessions in supervised workers.")

    def wanted(path: Sequence[str]) -> bool:
        if shallow and len(path) > 1:
            _child(root, path[0])  # the noun's group, as the whole tree has it
            return False
        return tuple(path[: len(prefix)]) == prefix

    for operation_id in REGISTRY.ids():
        if not wanted(operation_id.split(".")):
            continue
        op = REGISTRY.get(operation_id)
        assert op is not None
        *nouns, verb = op.operation_id.split(".")
        group = root
        for noun in nouns:
            group = _child(group, noun)
        group.add_command(
            click.Command(
                name=verb,
                callback=_op_callback(op.operation_id),
                help=_op_help(op),
                params=[
                    _help_option(),
                    *op_params(op),
                    *_runtime_options(op.operation_id, op.confirmation == "required"),
                ],
                add_help_option=False,
            )
        )
    # A pair's stem group runs it, so it is wanted on the way to a deeper branch too.
    for stem, op in pairs(REGISTRY, lambda stem: wanted(stem) or prefix[: len(stem)] == stem):
        _attach_pair(root, stem, op)
    from ._shortcuts import SHORTCUTS

    for shortcut in SHORTCUTS():
        if not wanted(shortcut.path):
            continue
        group = root
        for noun in shortcut.path[:-1]:
            group = _child(group, noun)
        group.add_command(_shortcut_command(shortcut))
    for path, help_text in LOCAL_COMMANDS.items():
        if not wanted(path):
            continue
        group = root
        for noun in path[:-1]:
            group = _child(group, noun)
        if path[-1] in group.commands:
            continue
        group.add_command(
            click.Command(
                name=path[-1],
                callback=_local_callback(path),
                help=help_text,
                params=[click.Argument(["args"], nargs=-1, type=click.UNPROCESSED)],
                context_settings={"ignore_unknown_options": True},
                add_help_option=False,
            )
        )
    from ._examples import attach_examples

    attach_examples(root)
    return root


def _op_help(op: Any) -> str:
    note = _CLI_NOTES.get(op.operation_id)
    return f"{op.summary}{' ' + note if note else ''}\n\nOperation {op.operation_id}."


def _attach_pair(root: click.Group, stem: tuple[str, ...], op: Any) -> None:
    """Make the stem group of a consequential pair run it (see `_pairs`)."""
    parent = root
    for noun in stem[:-1]:
        parent = _child(parent, noun)
    group = _child(parent, stem[-1])
    confirm_run = _op_callback(op.operation_id, pair=True)

    @click.pass_context
    def run(ctx: click.Context, /, **values: Any) -> None:
        if ctx.invoked_subcommand is None:
            confirm_run(**values)

    group.callback = run
    preview = ".".join((*stem, "preview"))
    group.help = (f"{op.summary}\n\nIt previews first (what it will do), asks, then confirms: "
                  f"--yes confirms without asking, --dry-run only previews. Operations "
                  f"{preview} then {op.operation_id} ('{' '.join(stem)} preview' and "
                  f"'{' '.join(stem)} confirm' run one each, for scripts).")  # fmt: skip
    fields = pair_params(op)
    group.params = [_help_option(), *fields, *_runtime_options(op.operation_id, True)]
    group.fields = tuple(p.opts[0] for p in fields
                         if isinstance(p, click.Option) and p.name != "command_id")  # fmt: skip


_TREES: dict[tuple[str, ...], click.Group] = {}  # bounded: one per command path at most


def _branch(argv: Sequence[str]) -> tuple[str, ...]:
    """The longest start of `argv` that begins some command's path (op IDs from the
    registry's index, shortcuts, local commands): only that branch needs building."""
    from maia.protocol import REGISTRY

    from ._shortcuts import SHORTCUTS

    paths = [tuple(i.split(".")) for i in REGISTRY.ids()]
    paths += [s.path for s in SHORTCUTS()] + list(LOCAL_COMMANDS)
    branch: tuple[str, ...] = ()
    for token in argv:
        longer = (*branch, token)
        if not any(path[: len(longer)] == longer for path in paths):
            break
        branch = longer
    return branch


def _tree(argv: Sequence[str] = ()) -> click.Group:
    branch = _branch(argv)
    tree = _TREES.get(branch)
    if tree is None:
        tree = _TREES[branch] = command_tree(branch, shallow=not branch)
    return tree


def command_path(argv: Sequence[str]) -> tuple[tuple[str, ...], click.Command | None]:
    """The longest prefix of `argv` naming commands, and the command it ends on (None: root)."""
    node: click.Command = _tree(argv)
    path: list[str] = []
    for token in argv:
        if not isinstance(node, click.Group) or token not in node.commands:
            break
        node = node.commands[token]
        path.append(token)
    return tuple(path), (node if path else None)


def parse_invocation(argv: Sequence[str]) -> Invocation:
    """Parse one command line (without the `maia` prefix) into an Invocation. No I/O.

    Raises click.UsageError (exit 2: unknown command, bad flag, missing argument) and
    Refusal (exit 2) for a `--schema` line that schema mode refuses.
    """
    args = list(argv)
    path, command = command_path(args)
    rest = args[len(path) :]
    operation_id = ".".join(path)
    from maia.protocol import REGISTRY

    if command is not None and operation_id in REGISTRY and wants_schema(rest):
        which = parse_schema_tokens(rest)
        return Invocation(
            None, local=("schema",), params={"operation": operation_id, "which": which}
        )
    if command is not None and path in LOCAL_COMMANDS:
        return Invocation(None, local=path, args=tuple(rest))
    try:
        _tree(args).main(args, prog_name="maia", standalone_mode=False)
    except _Done as done:
        return done.invocation
    raise click.UsageError("no command given")  # pragma: no cover - every callback raises
