"""Problems found in a configuration file, and the checker that collects them.

A configuration file is checked whole: the checker walks the parsed document, records every
problem with the key's path (and, when the document was parsed with locations, its line and
column) and carries on with a default, so `maia config check` can list every mistake at once.
`raise_if_any` turns the list into one `configuration_invalid` whose message names the first
problem and whose details carry them all.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Final

import attrs

from maia.core import MaiaError, parse_definition_ref

from ._jsonc import JsoncError, Locations, Path

MAX_STRING: Final = 4096
SELF_PREFIX: Final = "project:self/"
MAX_REPORTED: Final = 100
MAX_IN_MESSAGE: Final = 20
# How the Node's problem about an admitted snapshot it cannot read says so (config.show,
# node.status); `maia config show` recognises it by this phrase.
UNREADABLE_SNAPSHOT: Final = "cannot be read by this Maia"


def dotted(path: Path) -> str:
    """`("swarm", "capacity", "x")` → `swarm.capacity.x`; list indexes as `[0]`; root `$`."""
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
    return text or "$"


MAX_PATH: Final = 512  # ConfigProblem's bounds on the wire (config.show, node.status)
MAX_DETAIL: Final = 1024


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


def _cut_path(text: str) -> str:
    return _cut(text, MAX_PATH)


def _cut_detail(text: str) -> str:
    return _cut(text, MAX_DETAIL)


@attrs.frozen
class Problem:
    """One mistake: which file, which key, what is wrong, and where (when known). The key
    and the message are cut to the wire's bounds: a file may hold a key or a value far
    longer (a 600,000-character key), and a problem that did not fit made config.show fail
    and node.status leave the file out."""

    source: str
    path: str = attrs.field(converter=_cut_path)
    message: str = attrs.field(converter=_cut_detail)
    line: int | None = None
    column: int | None = None

    def __str__(self) -> str:
        where = f"{self.source}:{self.line}:{self.column}" if self.line else self.source
        return f"{where}: {self.path}: {self.message}"

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"source": self.source, "path": self.path, "detail": self.message}
        if self.line is not None:
            out["line"], out["column"] = self.line, self.column
        return out


def syntax_problem(error: JsoncError) -> Problem:
    """The problem of a syntax error, named by the key being read (`$`: the document)."""
    return Problem(error.source, dotted(error.path), error.reason, error.line, error.column)


def raise_if_any(problems: Sequence[Problem]) -> None:
    """Raise `configuration_invalid` naming the first problem, listing all in details."""
    if not problems:
        return
    first = problems[0]
    listed = [str(p) for p in problems[1:MAX_IN_MESSAGE]]
    more = "".join(f"\n  {line}" for line in listed)
    if len(problems) > MAX_IN_MESSAGE:
        more += f"\n  (and {len(problems) - MAX_IN_MESSAGE} more)"
    details: dict[str, Any] = {
        **first.to_json(),
        "problems": [p.to_json() for p in problems[:MAX_REPORTED]],
    }
    raise MaiaError("configuration_invalid", f"configuration is invalid: {first}{more}", details)


class Checker:
    """Walks a parsed document, collecting problems; each method returns a usable value."""

    def __init__(self, source: str, locations: Locations | None = None) -> None:
        self.source = source
        self.locations = locations
        self.problems: list[Problem] = []

    def report(self, path: Path, message: str) -> None:
        line = column = None
        if self.locations is not None:
            line, column = self.locations.line_column(path)
        self.problems.append(Problem(self.source, dotted(path), message, line, column))

    def obj(self, value: Any, path: Path, allowed: set[str] | None = None) -> dict[str, Any]:
        """The object at `path` ({} when it is not one), unknown keys reported."""
        if not isinstance(value, dict):
            self.report(path, "must be an object")
            return {}
        for key in value:
            if allowed is not None and key not in allowed:
                self.report((*path, key), "unknown key")
        return value

    def required(self, body: dict[str, Any], key: str, path: Path) -> Any:
        if key not in body:
            self.report((*path, key), "is required")
        return body.get(key)

    def integer(self, value: Any, path: Path, low: int, high: int, default: int) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            self.report(path, f"must be an integer {low}..{high}")
            return default
        return value

    def boolean(self, value: Any, path: Path, default: bool) -> bool:
        if not isinstance(value, bool):
            self.report(path, "must be true or false")
            return default
        return value

    def string(self, value: Any, path: Path, pattern: re.Pattern[str] | None = None) -> str | None:
        if not isinstance(value, str) or not value or len(value) > MAX_STRING:
            self.report(path, f"must be a non-empty string of at most {MAX_STRING} characters")
            return None
        if pattern is not None and pattern.fullmatch(value) is None:  # `$` passes a final \n
            self.report(path, f"must match {pattern.pattern}")
            return None
        return value

    def choice(self, value: Any, path: Path, choices: Sequence[str]) -> str | None:
        if value not in choices:
            self.report(path, "must be " + " or ".join(f'"{c}"' for c in choices))
            return None
        return str(value)

    def strings(
        self,
        value: Any,
        path: Path,
        limit: int,
        pattern: re.Pattern[str] | None = None,
        *,
        non_empty: bool = False,
    ) -> tuple[str, ...]:
        if not isinstance(value, list) or len(value) > limit or (non_empty and not value):
            size = "1.." if non_empty else "at most "
            self.report(path, f"must be a list of {size}{limit} strings")
            return ()
        found = (self.string(v, (*path, i), pattern) for i, v in enumerate(value))
        return tuple(s for s in found if s is not None)

    def ref(
        self, value: Any, path: Path, scopes: Sequence[str], *, allow_self: bool = False
    ) -> str | None:
        """A definition reference in one of `scopes` (builtin, user, project); with
        `allow_self`, the Project-file shorthand `project:self/<id>` too."""
        if not isinstance(value, str):
            self.report(path, "must be a reference string")
            return None
        text = value
        if allow_self and value.startswith(SELF_PREFIX):
            text = "project:self-placeholder/" + value[len(SELF_PREFIX) :]
        try:
            parsed = parse_definition_ref(text, dotted(path))
        except MaiaError:
            forms = {"builtin": "builtin:<id>", "user": "user:<id>",
                     "project": "project:<project-id>/<id>"}  # fmt: skip
            wanted = [forms[s] for s in scopes]
            if allow_self:
                wanted.append("project:self/<id>")
            self.report(path, "must be " + " or ".join(wanted))
            return None
        if parsed.scope not in scopes:
            self.report(path, f"a {parsed.scope}: reference is not allowed here")
            return None
        return value
