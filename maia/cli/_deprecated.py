"""Deprecated CLI names: a renamed command or flag still works, and says so on stderr.

`rewrite_deprecated(args, deprecations)` rewrites a command line that uses a deprecated
command (`kind="command"`, name `"session peek"`) or flag (`kind="flag"`, name
`"session list --all"`) into its replacement, and returns the machine-readable diagnostics
(`Deprecation.diagnostic()`) for the caller to print, one JSON object a line after
`maia: deprecated: `. Tokens after `--` are operands, never rewritten. A deprecated
operation's command (its ID with spaces) is a command alias too, so renaming an op renames
its command with it. Diagnostics from the Node (`deprecations` in an answer) are printed the
same way by `report`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any, TextIO

from maia.protocol import Deprecation

PREFIX = "maia: deprecated: "


def _command_words(entry: Deprecation) -> tuple[list[str], list[str] | None]:
    if entry.kind == "operation":
        old = entry.name.split(".")
        return old, entry.replacement.split(".") if entry.replacement else None
    return entry.name.split(), entry.replacement.split() if entry.replacement else None


def rewrite_deprecated(
    args: Sequence[str], deprecations: Iterable[Deprecation]
) -> tuple[list[str], list[dict[str, Any]]]:
    """The command line with deprecated commands and flags replaced, and their diagnostics."""
    out = list(args)
    found: list[dict[str, Any]] = []
    end = out.index("--") if "--" in out else len(out)
    for entry in deprecations:
        if entry.kind in ("command", "operation"):
            old, new = _command_words(entry)
            if new is not None and out[: len(old)] == old and len(old) <= end:
                out[: len(old)] = new
                end += len(new) - len(old)
                found.append(entry.diagnostic())
        elif entry.kind == "flag":
            *command, flag = entry.name.split()
            if out[: len(command)] != command:
                continue
            for index in range(len(command), end):
                token = out[index]
                if token == flag or token.startswith(flag + "="):
                    if entry.replacement is not None:
                        new_flag = entry.replacement.split()[-1]
                        out[index] = new_flag + token[len(flag) :]
                    found.append(entry.diagnostic())
    return out, found


def report(diagnostics: Iterable[dict[str, Any]], stderr: TextIO) -> None:
    """Print each diagnostic as one JSON line on stderr."""
    for diagnostic in diagnostics:
        stderr.write(PREFIX + json.dumps(diagnostic, sort_keys=True) + "\n")
