"""Parsing: the grammar projected from the registry (parity both ways), flags derived from
input schemas, generated command IDs, references, runtime flags; parsing never does I/O and
fails only with a usage error."""

from __future__ import annotations

import re
from typing import Any

import attrs
import click
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from maia.cli import Invocation, command_tree, main, parse_invocation
from maia.cli._flags import op_params, wire_params
from maia.cli._invocation import LOCAL_COMMANDS, parse_duration
from maia.cli._schema_mode import Refusal
from maia.cli._shortcuts import SHORTCUTS
from maia.core._shapes import class_plan
from maia.protocol import REGISTRY, OperationDescriptor, field


def _leaves(group: click.Group, path: tuple[str, ...] = ()) -> dict[tuple[str, ...], click.Command]:
    out: dict[tuple[str, ...], click.Command] = {}
    for name, command in group.commands.items():
        if isinstance(command, click.Group):
            out.update(_leaves(command, (*path, name)))
        else:
            out[(*path, name)] = command
    return out


def test_parity_every_op_has_a_command_and_every_command_an_op() -> None:
    """Each registered op is `maia <noun> <verb>`; each leaf command is an op or a named
    local command (this fails when an op is added without a command or the reverse)."""
    leaves = _leaves(command_tree())
    ops = {tuple(op.operation_id.split(".")) for op in REGISTRY}
    assert ops <= set(leaves), sorted(ops - set(leaves))
    shortcuts = {s.path: s.operation_id for s in SHORTCUTS()}  # friendly commands onto ops
    assert all(REGISTRY.get(op_id) is not None for op_id in shortcuts.values())
    # A shortcut may stand in for its op's own command (`node hello`, with the CLI's defaults).
    assert set(leaves) - ops == (set(LOCAL_COMMANDS) - ops) | (set(shortcuts) - ops)


def test_every_input_field_has_a_parameter() -> None:
    """Every input field of every op is reachable from the command line."""
    for op in REGISTRY:
        names = {param.name for param in op_params(op)}
        fields = {plan.name for plan in class_plan(op.input_type)} if op.input_type else set()
        assert fields <= names, (op.operation_id, fields - names)


def test_turn_send_positionals_reference_and_generated_command_id() -> None:
    """`turn send REF TEXT`: REF is a Session reference, the command ID is generated once."""
    invocation = parse_invocation(["turn", "send", "demo", "hello there", "--wait"])
    assert invocation.operation_id == "turn.send"
    assert invocation.params["sessionId"] == "demo"
    assert invocation.params["text"] == "hello there"
    assert invocation.references == {"sessionId": "session"}
    assert invocation.wait
    assert invocation.command_id_generated
    assert re.fullmatch(r"command_[0-9a-f]{32}", invocation.params["commandId"])
    given_id = parse_invocation(["turn", "send", "demo", "x", "--command-id", "retry-1"])
    assert given_id.params["commandId"] == "retry-1"
    assert not given_id.command_id_generated


def test_list_flags_repeat_booleans_negate_and_ints_convert() -> None:
    """Lists repeat (singular alias), booleans take --x/--no-x, integers are integers."""
    invocation = parse_invocation(
        ["session", "list", "--state", "idle", "--state", "running", "--label", "a",
         "--labels", "b", "--include-archived", "--no-settled", "--limit", "5", "--jsonl"]
    )  # fmt: skip
    assert invocation.params == {
        "state": ["idle", "running"],
        "labels": ["a", "b"],
        "includeArchived": True,
        "settled": False,
        "limit": 5,
    }
    assert invocation.output == "jsonl"
    assert parse_invocation(["session", "list"]).params == {}


def test_session_create_project_is_optional_and_a_reference() -> None:
    """session create defaults its Project (the cwd's) and resolves --project-id as a name."""
    bare = parse_invocation(["session", "create", "--title", "t"])
    assert "projectId" not in bare.params
    named = parse_invocation(["session", "create", "--project-id", "myproj"])
    assert named.references == {"projectId": "project"}


def test_events_read_position_after_follow_timeout() -> None:
    """events read starts at the start, or after --after CURSOR; --follow and --timeout."""
    assert parse_invocation(["events", "read"]).params["position"] == {"kind": "start"}
    invocation = parse_invocation(["events", "read", "--after", "c1.x", "-f", "--timeout", "2m"])
    assert invocation.params["position"] == {"kind": "cursor", "cursor": "c1.x"}
    assert invocation.follow
    assert invocation.timeout_s == 120.0


def test_events_read_after_and_position_exclude_each_other() -> None:
    """--after CURSOR is a position itself: given with --position, one would silently win."""
    from maia.cli._invocation import NamedUsageError

    with pytest.raises(NamedUsageError) as refused:
        parse_invocation(["events", "read", "--after", "c1.x", "--position", '{"kind":"start"}'])
    assert refused.value.path == "--after"
    assert "--after and --position exclude each other" in refused.value.format_message()


@pytest.mark.parametrize(
    ("text", "seconds"), [("30s", 30.0), ("500ms", 0.5), ("2m", 120.0), ("1h", 3600.0), ("7", 7.0)]
)
def test_durations(text: str, seconds: float) -> None:
    """--timeout takes s, ms, m, h or bare seconds."""
    assert parse_duration(text) == seconds


def test_duration_is_stripped_before_the_pattern() -> None:
    """Whitespace around the value (a final newline from `$(cat file)`) is stripped first,
    so `$` never meets a final newline; a newline inside the value is refused."""
    assert parse_duration(" 30s\n") == 30.0
    for text in ("30s\nx", "3\n0s", "30s\n\n1"):
        with pytest.raises(click.BadParameter):
            parse_duration(text)


@pytest.mark.parametrize(
    "argv",
    [
        ["nosuch"],
        ["session", "show"],
        ["session", "list", "--json", "--jsonl"],
        ["session", "list", "--limit", "many"],
        ["session", "wait", "x", "--timeout", "soon"],
        ["turn", "send", "x"],
        ["session", "list", "--state", "bogus"],
    ],
)
def test_bad_lines_are_usage_errors(argv: list[str]) -> None:
    """Unknown commands, missing operands, bad values: click.UsageError (exit 2)."""
    with pytest.raises(click.UsageError):
        parse_invocation(argv)


def test_help_and_schema_and_local_commands_are_local() -> None:
    """--help carries its text; --schema is answered offline; node start passes its args."""
    shown = parse_invocation(["session", "create", "--help"])
    assert shown.local == ("help",)
    assert "--title" in shown.text
    assert parse_invocation(["session"]).local == ("help",)
    assert parse_invocation([]).local == ("home",)
    schema = parse_invocation(["session", "show", "--schema=input"])
    assert schema.local == ("schema",)
    assert schema.params == {"operation": "session.show", "which": "input"}
    with pytest.raises(Refusal):
        parse_invocation(["session", "show", "--schema", "--yes"])
    node = parse_invocation(["node", "start", "--detach", "--port", "0"])
    assert (node.local, node.args) == (("node", "start"), ("--detach", "--port", "0"))


@attrs.frozen
class _MapInput:
    env: dict[str, str] = field(doc="Environment.", factory=dict)  # noqa: RUF009
    spec: object = field(doc="Anything.", default=None, opaque="spec")


_MAP_OP = OperationDescriptor(
    operation_id="thing.make", summary="t", input_type=_MapInput, output_type=_MapInput
)


def test_maps_take_key_value_and_objects_take_json() -> None:
    """A map field takes KEY=VALUE (repeatable), an opaque one JSON; bad values are refused."""
    names = {p.name: p for p in op_params(_MAP_OP)}
    assert names["env"].multiple
    wire = wire_params(_MAP_OP, {"env": ("A=1", "B=x=y"), "spec": '{"k": [1]}'})
    assert wire == {"env": {"A": "1", "B": "x=y"}, "spec": {"k": [1]}}
    with pytest.raises(click.BadParameter):
        wire_params(_MAP_OP, {"env": ("novalue",)})
    with pytest.raises(click.BadParameter):
        wire_params(_MAP_OP, {"spec": "{not json"})


_WORDS = st.sampled_from(
    ["session", "turn", "send", "list", "show", "wait", "queue", "events", "read", "--json",
     "--jsonl", "--wait", "--follow", "--state", "idle", "--limit", "3", "--timeout", "1s",
     "--schema", "--schema=input", "--", "-x", "--help", "node", "start", "project", "add"]
)  # fmt: skip


@settings(max_examples=150)
@given(st.lists(st.one_of(_WORDS, st.text(max_size=8)), max_size=8))
def test_parsing_only_ever_answers_or_refuses(argv: list[str]) -> None:
    """Any token list parses to an Invocation or fails with a usage error/refusal."""
    try:
        result: Any = parse_invocation(argv)
    except (click.UsageError, Refusal):
        return
    assert isinstance(result, Invocation)


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_completion_scripts(shell: str, capsys: pytest.CaptureFixture[str]) -> None:
    """`maia completion SHELL` prints click's script for the maia program; others exit 2."""
    assert main(["completion", shell]) == 0
    out = capsys.readouterr().out
    assert "_MAIA_COMPLETE" in out
    assert main(["completion", "tcsh"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "bash|zsh|fish" in captured.err


def test_help_says_what_each_group_is_for_and_hides_what_the_cli_fills() -> None:
    """`maia --help` gives every noun a line of its own (never "<noun> commands."); a pair's
    stem says it previews first and offers no flag the preview fills (digest, proof, preview
    ID), yet still takes them; `session wait` says the CLI repeats the 4 s call."""
    root = command_tree()
    for name, group in root.commands.items():
        if isinstance(group, click.Group):
            assert group.help != f"{name} commands.", name
    admit = parse_invocation(["config", "admit", "--help"]).text
    assert "It previews first" in admit
    for hidden in ("--proof", "--input-digest", "--preview-id", "--manifest-digest"):
        assert hidden not in admit
    assert "--command-id" in admit
    scripted = parse_invocation(["config", "admit", "--proof", "p" * 16, "--input-digest",
                                 "sha256:" + "0" * 64, "--yes"])  # fmt: skip
    assert scripted.params["proof"] == "p" * 16
    assert "repeats the call" in parse_invocation(["session", "wait", "--help"]).text


@pytest.mark.parametrize(
    ("flags", "says"),
    [
        (["--timeout=-1s"], "Invalid value for --timeout: expects a duration"),
        (["--timeout", "-1s"], "Invalid value for --timeout: expects a duration"),
        (["--timeout"], "'--timeout' requires an argument"),
    ],
)
def test_a_valued_flag_takes_a_word_that_begins_with_a_dash(flags: list[str], says: str) -> None:
    """`--timeout -1s` is a bad duration, not an unknown option '-1', and a valued flag
    given no value is refused, not taken as set."""
    import click

    with pytest.raises(click.UsageError) as refused:
        parse_invocation(["turn", "send", "s", "hi", "--wait", *flags])
    assert says in refused.value.format_message()
