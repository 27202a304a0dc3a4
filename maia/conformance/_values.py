"""Placeholders and dotted paths: how a fixture names generated IDs and result fields.

A string that is exactly `$name` is replaced by the saved value (any JSON type); `${name}`
inside a longer string by its text. `${new}` is a fresh command ID at each occurrence;
`${pad:N}` is N letters x (a frame past a size bound).
Paths are dotted wire names with `[i]` for list items (`session.labels[0]`), as the Node's
validation messages write them; `#len` at the end is a list's length.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Mapping
from typing import Any, Final

_WHOLE: Final = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")  # fullmatch: `$` passes a final \n
_INLINE: Final = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*(?::[0-9]{1,7})?)\}")
MAX_PAD: Final = 2 * 1024 * 1024  # `${pad:N}`: N characters, for a frame past a size bound
_STEP: Final = re.compile(r"([^.\[\]]+)|\[(\d+)\]")
MISSING: Final = object()


class PlaceholderError(KeyError):
    """A fixture names a value nothing saved (the message names it)."""


def fresh_command_id() -> str:
    return "cmd-" + secrets.token_hex(8)


def substitute(value: Any, saved: Mapping[str, Any]) -> Any:
    """`value` with every placeholder replaced. Raises PlaceholderError for an unknown one."""
    if isinstance(value, str):
        whole = _WHOLE.fullmatch(value)
        if whole is not None:
            return _lookup(whole.group(1), saved)
        return _INLINE.sub(lambda m: str(_lookup(m.group(1), saved)), value)
    if isinstance(value, list):
        return [substitute(item, saved) for item in value]
    if isinstance(value, dict):
        return {key: substitute(item, saved) for key, item in value.items()}
    return value


def _lookup(name: str, saved: Mapping[str, Any]) -> Any:
    if name == "new":
        return fresh_command_id()
    if name.startswith("pad:") and int(name[4:]) <= MAX_PAD:
        return "x" * int(name[4:])
    if name not in saved:
        raise PlaceholderError(f"${name} is not saved by any earlier step")
    return saved[name]


def at_path(document: Any, path: str) -> Any:
    """The value at `path` in `document`, or MISSING."""
    length = path.endswith("#len")
    current = document
    for name, index in _STEP.findall(path.removesuffix("#len")):
        if name:
            if not isinstance(current, dict) or name not in current:
                return MISSING
            current = current[name]
        else:
            if not isinstance(current, list) or int(index) >= len(current):
                return MISSING
            current = current[int(index)]
    if length:
        return len(current) if isinstance(current, (list, dict, str)) else MISSING
    return current


def mismatches(document: Any, expected: Mapping[str, Any]) -> list[str]:
    """Each `path: want X, got Y` where `document` differs from `expected` (path -> value;
    the value `"*"` only asks that the path exists)."""
    problems = []
    for path, want in expected.items():
        got = at_path(document, path)
        if got is MISSING:
            problems.append(f"{path}: missing")
        elif want != "*" and got != want:
            problems.append(f"{path}: want {want!r}, got {got!r}")
    return problems
