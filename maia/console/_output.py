"""Where a command's output goes: straight to the terminal, or through a pager when long.

A command's output is held for a moment (`OutputGate`): if the command finishes within it
and the text is longer than the screen, it goes through a pager (`$PAGER`, else `less -R -F
-X`); if the command is still running when the moment ends (a stream: `turn send --wait`,
`events read --follow`), the gate opens and everything passes through as it comes. Without
a terminal nothing is paged. The buffer is bounded: past it the gate opens too.
"""

from __future__ import annotations

import io
import os
import pydoc
import shlex
import shutil
from typing import TextIO

HOLD_S = 0.5
MAX_HELD_CHARS = 1 << 20


class OutputGate(io.TextIOBase):
    """A text sink that holds a command's output until `release()` or `finish()`."""

    def __init__(self, sink: TextIO, *, page_lines: int | None) -> None:
        self._sink = sink
        self._page_lines = page_lines
        self._held: list[str] = []
        self._held_chars = 0
        self._open = False

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return False  # commands decide colour from the real terminal, not from us

    def write(self, text: str) -> int:
        if self._open:
            self._sink.write(text)
            self._sink.flush()
        else:
            self._held.append(text)
            self._held_chars += len(text)
            if self._held_chars > MAX_HELD_CHARS:
                self.release()
        return len(text)

    def flush(self) -> None:
        if self._open:
            self._sink.flush()

    def release(self) -> None:
        """Pass everything held, and everything after, straight through."""
        if self._open:
            return
        self._open = True
        held, self._held, self._held_chars = "".join(self._held), [], 0
        if held:
            self._sink.write(held)
            self._sink.flush()

    def finish(self) -> str | None:
        """End of the command: the text to page, or None when it was written out."""
        if self._open:
            return None
        text = "".join(self._held)
        self._held, self._held_chars, self._open = [], 0, True
        if self._page_lines is not None and text.count("\n") > self._page_lines:
            return text
        self._sink.write(text)
        self._sink.flush()
        return None


def screen_lines(sink: TextIO) -> int | None:
    """Lines that fit on the screen, or None when `sink` is not a terminal (no paging)."""
    try:
        if not sink.isatty() or os.environ.get("TERM") == "dumb":
            return None
    except (AttributeError, ValueError):
        return None
    return max(5, shutil.get_terminal_size().lines - 2)


def page(text: str) -> bool:
    """Show `text` through the pager (blocking: run it in a thread); False when there is no
    pager to run (the caller prints the text itself)."""
    command = os.environ.get("PAGER") or "less -R -F -X"
    try:
        program = shlex.split(command)[0]
    except (ValueError, IndexError):
        return False
    if shutil.which(program) is None:
        return False
    pydoc.pipepager(text, command)
    return True
