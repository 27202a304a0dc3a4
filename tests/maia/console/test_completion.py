"""Console completion over the CLI's real click tree: every op completes (parity), flags and
choices complete, Session parameters complete IDs and titles from the cache."""

from __future__ import annotations

from typing import Any

import click
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from prompt_toolkit.completion import CompleteEvent
from prompt_toolkit.document import Document

from maia.cli import command_tree
from maia.console import ApprovalCache, ConsoleCompleter, FeedEvent, RoutineCache, SessionCache
from maia.console._completer import BUILTINS, MAX_COMPLETIONS, split_line
from maia.protocol import REGISTRY

ALPHA = "session_" + "a" * 32
BETA = "session_" + "b" * 32
TREE = command_tree()


def completer() -> ConsoleCompleter:
    cache = SessionCache()
    cache.seed(
        [
            {"sessionId": ALPHA, "title": "Alpha report", "state": "running"},
            {"sessionId": BETA, "title": "beta", "state": "stopped"},
        ]
    )
    return ConsoleCompleter(TREE, cache)


def texts(line: str, source: ConsoleCompleter | None = None) -> list[str]:
    found = (source or completer()).get_completions(Document(line), CompleteEvent(True))
    return [c.text for c in found]


def applied(line: str, text: str) -> str:
    """The line after accepting the completion `text` (as prompt-toolkit would)."""
    for c in completer().get_completions(Document(line), CompleteEvent(True)):
        if c.text == text:
            return line[: len(line) + c.start_position] + c.text
    raise AssertionError(f"{text!r} not offered for {line!r}")


@pytest.mark.parametrize("op_id", [op.operation_id for op in REGISTRY])
def test_every_op_completes_word_by_word(op_id: str) -> None:
    """Parity: each registered op's command path completes one word at a time from ''."""
    line = ""
    for word in op_id.split("."):
        assert word in texts(line), f"{word!r} not offered after {line!r}"
        line = applied(line + word[:1], word) + " "


def test_every_session_parameter_completes_sessions() -> None:
    """Parity: every argument or option the CLI marks as a Session reference completes
    cached Session titles and IDs."""
    checked = 0
    for op in REGISTRY:
        *nouns, verb = op.operation_id.split(".")
        group: click.Command = TREE
        for name in [*nouns, verb]:
            assert isinstance(group, click.Group)
            found = group.commands.get(name)
            assert found is not None
            group = found
        line = " ".join([*nouns, verb])
        for param in group.params:
            if param.metavar != "SESSION":
                continue
            checked += 1
            if isinstance(param, click.Option):
                prefix = f"{line} {param.opts[0]} "
            else:
                assert isinstance(param, click.Argument)
                position = [p for p in group.params if isinstance(p, click.Argument)].index(param)
                prefix = line + " " + "x " * position
            assert "'Alpha report'" in texts(prefix + "Alp"), prefix
            assert ALPHA in texts(prefix + "session_a"), prefix
    assert checked >= 8


def test_root_offers_builtins_that_shadow_no_command() -> None:
    """The console's own commands complete at the root and name no CLI command."""
    offered = texts("")
    assert set(BUILTINS) <= set(offered)
    assert not set(BUILTINS) & set(TREE.commands)


def test_flags_and_choices() -> None:
    """Options complete after '-', and a Choice option completes its values."""
    assert {"--wait", "--json", "--timeout"} <= set(texts("turn send x --"))
    assert texts("session list --sta") == ["--state"]
    assert {"idle", "running"} <= set(texts("session list --state "))


def test_titles_quoted_live_first_and_prefixes() -> None:
    """Titles are quoted for the shell grammar, live Sessions come first, a `maia` prefix and
    an open quote are understood, and `attach` completes Sessions."""
    assert texts("session show ") == ["'Alpha report'", "beta", ALPHA, BETA]
    assert texts("maia session show al") == ["'Alpha report'"]
    assert texts("attach 'Alpha r") == ["'Alpha report'"]
    assert texts("session show port") == ["'Alpha report'"]  # a title contains it
    assert texts("nosuch command ") == []


def test_cache_follows_events_in_completion() -> None:
    """A Session created, renamed or archived after the seed shows in completion at once."""
    from maia.console import FeedEvent

    cache = SessionCache()
    source = ConsoleCompleter(TREE, cache)
    gamma = "session_" + "c" * 32
    cache.apply(FeedEvent("session.created", gamma, payload={"title": "Gamma"}))
    assert texts("attach Ga", source) == ["Gamma"]
    cache.apply(FeedEvent("session.renamed", gamma, payload={"title": "Delta two"}))
    assert texts("attach ", source) == ["'Delta two'", gamma]
    cache.apply(FeedEvent("session.archived", gamma))
    assert texts("attach ", source) == []


def test_split_line() -> None:
    """The line splits like a shell; the current word keeps its raw length for replacement."""
    assert split_line("a b") == split_line("a b")
    split = split_line('turn send "my ti')
    assert (split.words, split.current, split.current_raw_length) == (("turn", "send"), "my ti", 6)
    assert split_line("session ").current == ""


@settings(max_examples=200)
@given(st.text(alphabet=st.sampled_from(list("session turn list show -'\"\\ Alp\t")), max_size=40))
def test_completion_never_raises(line: str) -> None:
    """Any typed line completes to a bounded list, never an exception."""
    assert len(texts(line)) <= MAX_COMPLETIONS


ROUTINE = "routine_" + "c" * 32
ROUTINE_LIST_PAGE: dict[str, Any] = {  # routine.list's wire form, as the console seeds from it
    "routines": [
        {"routineId": ROUTINE, "name": "nightly", "state": "active", "revision": 1},
        {"routineId": "routine_" + "d" * 32, "name": "old", "state": "disabled", "revision": 3},
    ],
    "nextCursor": None,
}


def routine_completer() -> ConsoleCompleter:
    routines = RoutineCache()
    routines.seed(ROUTINE_LIST_PAGE["routines"])
    return ConsoleCompleter(TREE, SessionCache(), routines)


def test_routine_ids_complete_by_id_prefix_and_by_name() -> None:
    """`routine show`, `pause` and `--routine-id` complete routine IDs from the cache, found by
    an ID prefix or by the routine's name; disabled ones last."""
    source = routine_completer()
    assert texts("routine show routine_c", source) == [ROUTINE]
    assert texts("routine pause night", source) == [ROUTINE]
    assert texts("routine show ", source) == [ROUTINE, "routine_" + "d" * 32]
    assert texts("routine run --routine-id night", source) == [ROUTINE]


def test_the_routine_cache_follows_routine_events() -> None:
    """A `routine.created` event adds the routine; a later one with its view updates it;
    an event without a routine view changes nothing."""
    routines = RoutineCache()
    view = {"routineId": ROUTINE, "name": "nightly", "state": "active"}
    assert routines.apply(FeedEvent("routine.created", payload={"routine": view}))
    assert routines.apply(
        FeedEvent("routine.paused", payload={"routine": {**view, "state": "paused"}})
    )
    assert not routines.apply(FeedEvent("routine.fire_attached", payload={"fireId": "x"}))
    assert not routines.apply(FeedEvent("session.created", payload={"routine": view}))
    assert [(t, r.state) for t, r in routines.matches("")] == [(ROUTINE, "paused")]


def test_the_routine_cache_is_bounded() -> None:
    """Past its bound the least recently touched routine is forgotten."""
    routines = RoutineCache(limit=2)
    routines.seed(
        {"routineId": f"routine_{i:032x}", "name": f"r{i}", "state": "active"} for i in range(3)
    )
    assert len(routines) == 2
    assert [t for t, _ in routines.matches("r0")] == []


APPROVAL = "approval_" + "e" * 32


def test_pending_approval_ids_complete_and_leave_when_answered() -> None:
    """`approval allow`, `deny` and `show` complete pending approval IDs (seeded from
    `approval.list`, added by `approval.requested`); an answered one no longer completes."""
    approvals = ApprovalCache()
    approvals.seed([{"approvalId": APPROVAL, "kind": "command", "summary": "touch x",
                     "state": "pending"},
                    {"approvalId": "approval_" + "f" * 32, "kind": "command", "summary": "",
                     "state": "allowed"}])  # fmt: skip
    source = ConsoleCompleter(TREE, SessionCache(), None, approvals)
    for verb in ("allow", "deny", "show"):
        assert texts(f"approval {verb} approval_", source) == [APPROVAL], verb
    second = "approval_" + "a" * 32
    requested = {"approvalId": second, "kind": "file_change", "summary": "edit a.py"}
    assert approvals.apply(FeedEvent("approval.requested", payload=requested))
    assert texts("approval allow approval_a", source) == [second]
    assert approvals.apply(FeedEvent("approval.allowed", payload={"approvalId": APPROVAL}))
    assert texts("approval deny approval_", source) == [second]
    assert not approvals.apply(FeedEvent("session.created", payload={"approvalId": second}))
