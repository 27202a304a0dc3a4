"""Where output goes, in which format, with or without colour; and the local commands
(help, schema, completion) that print without a Node.

Kept apart from `_execute` so `maia --help` and `--schema` import neither anyio nor the SDK,
and light (no click, no error type) so the one-call path (`_lean`) prints through it.
"""

from __future__ import annotations

import json
import os
import time
from typing import TYPE_CHECKING, Any, TextIO

from . import _exit
from ._render import human

if TYPE_CHECKING:
    from maia.core import MaiaError

    from ._invocation import Invocation


class Out:
    """Where output goes, in which format, and whether to colour it."""

    def __init__(
        self, stdout: TextIO, stderr: TextIO, fmt: str, fixed_now_ms: int | None = None
    ) -> None:
        self.stdout, self.stderr, self.fmt, self._now_ms = stdout, stderr, fmt, fixed_now_ms
        self.wrote_data = False  # progress notes stop once data flows (no interleaving)
        self.colour = fmt == "human" and _is_tty(stdout) and not os.environ.get("NO_COLOR")

    @property
    def now_ms(self) -> int:
        """Wall time for relative times, read when printing (presentation only)."""
        return self._now_ms if self._now_ms is not None else now_ms()

    def data(self, text: str) -> None:
        self.wrote_data = self.wrote_data or bool(text)
        self.stdout.write(text)
        self.stdout.flush()

    def message(self, text: str) -> None:
        self.stderr.write(f"maia: {text}\n")
        self.stderr.flush()

    def json(self, value: Any) -> None:
        self.data(json.dumps(value, ensure_ascii=False, sort_keys=True) + "\n")

    def result(self, operation_id: str, result: Any) -> None:
        """Print a successful result in the chosen format."""
        if self.fmt == "json":
            self.json({"ok": True, "result": result})
        elif self.fmt == "jsonl":
            from ._render import list_key

            key = list_key(result) if isinstance(result, dict) else None
            for item in result[key] if key else [result]:
                self.data(json.dumps(item, ensure_ascii=False, sort_keys=True) + "\n")
        else:
            self.data(human(operation_id, result, self.now_ms, self.colour))

    def error(self, error: MaiaError) -> None:
        if self.fmt in ("json", "jsonl"):
            self.json({"ok": False, "error": error.to_wire()})
        self.message(f"{error.message} ({error.code})")


def _is_tty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def waiting_note(out: Out, label: str) -> None:
    """The reassurance `execute`'s progress gives after a second of silence."""
    out.stderr.write(f"maia: waiting for {label}…\n")
    out.stderr.flush()


def now_ms() -> int:
    """Wall time for relative times in output (presentation only, never logic)."""
    return time.time_ns() // 1_000_000


def run_local(invocation: Invocation, out: Out) -> int:
    """Help, schema and completion: answered without a Node. Others say to use a shell."""
    if invocation.local == ("help",):
        out.data(invocation.text.rstrip("\n") + "\n")
        return _exit.OK
    if invocation.local == ("schema",):
        from ._schema_mode import render_schema

        out.data(render_schema(invocation.params["operation"], invocation.params["which"]))
        return _exit.OK
    if invocation.local == ("completion",):
        import click

        from ._completion import completion_script

        try:
            out.data(completion_script(invocation.args))
        except click.UsageError as error:
            out.message(error.format_message())
            return _exit.USAGE
        return _exit.OK
    out.message(f"run `maia {' '.join(invocation.local)}` from a shell")
    return _exit.USAGE
