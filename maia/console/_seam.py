"""The one seam between the console and the CLI: the console has no parser of its own.

A console line is the CLI grammar without the `maia` prefix, so the console hands the words
to the CLI's `parse_invocation`, runs the result with the CLI's `execute` on the console's
long-lived client, and completes from the CLI's `command_tree()`. `CommandSeam` is that
contract; `CliSeam` binds it to `maia.cli` (imported lazily, so a test may pass its own).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol, TextIO

import click

Confirm = Callable[[str], Awaitable[bool]]


class CommandSeam(Protocol):
    """What the console needs from the CLI."""

    def parse(self, argv: Sequence[str]) -> Any:
        """The invocation for `argv`. Raises `click.UsageError` (or a subclass)."""

    async def execute(
        self,
        invocation: Any,
        client: Any,
        *,
        stdout: TextIO,
        stderr: TextIO,
        interactive: bool,
        confirm: Confirm | None = None,
    ) -> int:
        """Run `invocation` on `client`, streaming to stdout/stderr; the exit code.
        `confirm(question)` asks the person before a consequential op."""

    def command_tree(self) -> click.Group:
        """The click tree: nouns, verbs, options and arguments, for completion."""


class CliSeam:
    """`CommandSeam` over `maia.cli` (parse_invocation, execute, command_tree)."""

    def __init__(self) -> None:
        self._tree: click.Group | None = None

    def parse(self, argv: Sequence[str]) -> Any:
        from maia.cli import parse_line

        return parse_line(list(argv))

    async def execute(
        self,
        invocation: Any,
        client: Any,
        *,
        stdout: TextIO,
        stderr: TextIO,
        interactive: bool,
        confirm: Confirm | None = None,
    ) -> int:
        from maia.cli import execute  # type: ignore[attr-defined,unused-ignore]

        code: int = await execute(
            invocation,
            client,
            stdout=stdout,
            stderr=stderr,
            interactive=interactive,
            confirm=confirm,
        )
        return code

    def command_tree(self) -> click.Group:
        if self._tree is None:
            from maia.cli import command_tree  # type: ignore[attr-defined,unused-ignore]

            self._tree = command_tree()
        return self._tree
