"""Tab completion of console lines: commands, flags, Session references, routine IDs and
pending approval IDs.

Commands, options and choices come from the CLI's click tree (the same one `maia` runs), so
every registered op completes without a list of our own. Session IDs and titles come from
the local `SessionCache` (routine IDs from the `RoutineCache`), never from a request per
keystroke. The line is split like a
shell line (`shlex`); an unclosed quote is read as the word being typed.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import attrs
import click
from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document

from ._approvals import ApprovalCache
from ._cache import SessionCache
from ._routines import RoutineCache

# Console commands that are not CLI commands (they need the console's terminal).
BUILTINS: dict[str, str] = {
    "attach": "follow a Session's output live until Ctrl-C",
    "feed": "feed on|off: print live events above the prompt (on at start)",
    "help": "show the console's keys and commands",
    "exit": "leave the console (also Ctrl-D)",
    "quit": "leave the console (also Ctrl-D)",
}
_REF_NAMES = frozenset({"ref", "reference", "target", "session", "session_ref"})
# Positional REF of these commands names a Session even though the noun is not `session`.
_SESSION_REF_COMMANDS = frozenset({("turn", "send"), ("turn", "queue", "list"), ("attach",)})
MAX_COMPLETIONS = 200


@attrs.frozen
class Split:
    """A line before the cursor: the finished words and the word being typed."""

    words: tuple[str, ...]
    current: str
    current_raw_length: int  # characters of the raw current word, quotes included


def split_line(text: str) -> Split:
    """Split like a shell; an unclosed quote starts the current word."""
    for closer in ("", '"', "'"):
        try:
            words = shlex.split(text + closer)
        except ValueError:
            continue
        if closer:
            start = text.rfind(closer)
            return Split(tuple(words[:-1]), words[-1] if words else "", len(text) - start)
        if not text or text[-1].isspace():
            return Split(tuple(words), "", 0)
        raw = len(text) - len(text.rstrip().rsplit(None, 1)[-1])
        return Split(tuple(words[:-1]), words[-1], len(text) - raw)
    return Split((), "", 0)


def quote_word(word: str) -> str:
    """The word as it must be typed (quoted when it holds spaces or quotes)."""
    return shlex.quote(word)


class ConsoleCompleter(Completer):
    """Completes console lines from a click tree and a `SessionCache`."""

    def __init__(
        self,
        tree: click.Group,
        cache: SessionCache,
        routines: RoutineCache | None = None,
        approvals: ApprovalCache | None = None,
    ) -> None:
        self._tree = tree
        self._cache = cache
        self._routines = routines if routines is not None else RoutineCache()
        self._approvals = approvals if approvals is not None else ApprovalCache()

    def get_completions(
        self, document: Document, complete_event: CompleteEvent
    ) -> Iterable[Completion]:
        split = split_line(document.text_before_cursor)
        for count, completion in enumerate(self.complete(split)):
            if count >= MAX_COMPLETIONS:
                break
            yield completion

    def complete(self, split: Split) -> Iterator[Completion]:
        words = list(split.words)
        if words and words[0] == "maia":  # typed by habit: the console accepts it
            words = words[1:]
        if words[:1] == ["approval"] and words[1:2] in (["allow"], ["deny"]):
            words = ["approval", "respond", *words[2:]]  # the CLI's aliases (_approval_cmd)
        if words and words[0] == "attach":
            if len(words) == 1:
                yield from self._sessions(split)
            return
        command: click.Command = self._tree
        path: list[str] = []
        while isinstance(command, click.Group) and words:
            found = _sub(command, words[0])
            if found is None:
                if words[0].startswith("-") and _has_options(command):
                    break  # a preview/confirm pair run at its stem: the group takes options
                return
            command, path = found, [*path, words.pop(0)]
        if isinstance(command, click.Group) and not words:
            if split.current.startswith("-") and _has_options(command):
                yield from _option_names(command, split)
                return
            yield from self._names(command, split, root=not path)
            return
        yield from self._params(tuple(path), command, words, split)

    def _names(self, group: click.Group, split: Split, *, root: bool) -> Iterator[Completion]:
        ctx = click.Context(group)
        names = {name: _help(group.get_command(ctx, name)) for name in group.list_commands(ctx)}
        if root:
            names.update(BUILTINS)
        for name in sorted(names):
            if name.startswith(split.current):
                yield Completion(name, -split.current_raw_length, display_meta=names[name])

    def _params(
        self, path: tuple[str, ...], command: click.Command, words: Sequence[str], split: Split
    ) -> Iterator[Completion]:
        pending: click.Option | None = None
        positional = 0
        ended = False  # after `--` every word is positional (click's rule too)
        for word in words:
            if ended:
                positional += 1
            elif pending is not None:
                pending = None
            elif word == "--":
                ended = True
            elif word.startswith("-") and word != "-":
                option = _option(command, word.split("=", 1)[0])
                if option is not None and "=" not in word and _takes_value(option):
                    pending = option
            else:
                positional += 1
        if pending is not None:
            yield from self._values(path, pending, split)
            return
        arguments = [p for p in command.params if isinstance(p, click.Argument)]
        argument = _nth_argument(arguments, positional)
        sessions = argument is not None and _is_session_param(path, argument, positional)
        if split.current.startswith("-") and not ended:
            yield from _option_names(command, split)
            if sessions:  # a title that begins with '-', as `-- TITLE`
                yield from self._sessions(split, guard=True)
            return
        if argument is not None and _is_approval_param(argument):
            yield from self._approval_ids(split)
        elif argument is not None and _is_routine_param(argument):
            yield from self._routine_ids(split)
        elif sessions:
            yield from self._sessions(split, guard=not ended)
        elif argument is not None and isinstance(argument.type, click.Choice):
            yield from _choices(argument.type, split)
        else:
            yield from _option_names(command, split)

    def _values(
        self, path: tuple[str, ...], option: click.Option, split: Split
    ) -> Iterator[Completion]:
        if isinstance(option.type, click.Choice):
            yield from _choices(option.type, split)
        elif _is_approval_param(option):
            yield from self._approval_ids(split)
        elif _is_routine_param(option):
            yield from self._routine_ids(split)
        elif _is_session_param(path, option, None):
            yield from self._sessions(split)

    def _sessions(self, split: Split, *, guard: bool = False) -> Iterator[Completion]:
        """Session IDs and titles matching the current word. `guard`: a positional REF with
        no `--` before it, where a title beginning with '-' would parse as an option: it is
        completed as `-- TITLE` (an option value or the console's `attach` takes it bare)."""
        for text, entry in self._cache.matches(split.current):
            meta = entry.state if text == entry.session_id else f"{entry.session_id} {entry.state}"
            word = quote_word(text)
            if guard and text.startswith("-"):
                word = f"-- {word}"
            yield Completion(word, -split.current_raw_length, display_meta=meta)

    def _routine_ids(self, split: Split) -> Iterator[Completion]:
        for text, entry in self._routines.matches(split.current):
            meta = f"{entry.name} {entry.state}"
            yield Completion(quote_word(text), -split.current_raw_length, display_meta=meta)

    def _approval_ids(self, split: Split) -> Iterator[Completion]:
        for entry in self._approvals.matches(split.current):
            meta = f"{entry.kind}: {entry.summary}"
            yield Completion(entry.approval_id, -split.current_raw_length, display_meta=meta)


def _is_approval_param(param: click.Parameter) -> bool:
    return "approval" in (param.name or "").lower()


def _has_options(command: click.Command) -> bool:
    return any(isinstance(p, click.Option) and not p.hidden and p.name != "help"
               for p in command.params)  # fmt: skip


def _is_routine_param(param: click.Parameter) -> bool:
    return "routine" in (param.name or "").lower()


def _sub(group: click.Group, name: str) -> click.Command | None:
    return group.get_command(click.Context(group), name)


def _help(command: click.Command | None) -> str:
    return "" if command is None else command.get_short_help_str(60)


def _option(command: click.Command, name: str) -> click.Option | None:
    for param in command.params:
        if isinstance(param, click.Option) and name in (*param.opts, *param.secondary_opts):
            return param
    return None


def _takes_value(option: click.Option) -> bool:
    return not option.is_flag and not option.count


def _option_names(command: click.Command, split: Split) -> Iterator[Completion]:
    names: dict[str, str] = {}
    for param in command.params:
        if isinstance(param, click.Option) and not param.hidden:
            for name in (*param.opts, *param.secondary_opts):
                names[name] = (param.help or "")[:60]
    for name in sorted(names):
        if name.startswith(split.current):
            yield Completion(name, -split.current_raw_length, display_meta=names[name])


def _choices(choice: click.Choice[Any], split: Split) -> Iterator[Completion]:
    for value in choice.choices:
        text = str(value)
        if text.startswith(split.current):
            yield Completion(quote_word(text), -split.current_raw_length)


def _nth_argument(arguments: Sequence[click.Argument], index: int) -> click.Argument | None:
    for argument in arguments:
        if argument.nargs == -1:
            return argument
        if index < argument.nargs:
            return argument
        index -= argument.nargs
    return None


def _is_session_param(
    path: tuple[str, ...], param: click.Parameter, positional: int | None
) -> bool:
    name = (param.name or "").lower()
    if "session" in name:
        return True
    if name not in _REF_NAMES and not name.endswith("_ref"):
        return False
    return (bool(path) and path[0] == "session") or (
        path in _SESSION_REF_COMMANDS and positional == 0
    )
