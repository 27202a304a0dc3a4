"""`turn send SESSION --file PATH`: a prompt read from a file, or from stdin for `-`.

A long prompt can't be an argument (the kernel caps argv; a shell mangles quotes), so the
text comes from a file. Reading is bounded: never more than the op's text limit (from the
registry: the field's `maxLength`) in bytes at 4 bytes a character, plus one, so a huge
file is refused without being held in memory. The text must be UTF-8; it is sent exactly
as read (a trailing newline included). The length itself is then checked as any
`turn.send` is (`validation_failed` naming `text`).
"""

from __future__ import annotations

import sys
from typing import BinaryIO

import anyio

from maia.core import MaiaError
from maia.protocol import OperationDescriptor

from ._flags import input_plan

BYTES_PER_CHARACTER = 4  # UTF-8's widest


def max_characters(op: OperationDescriptor, wire: str) -> int:
    """The registry's `maxLength` of the op's text field `wire`."""
    for plan in input_plan(op):
        if plan.wire == wire and plan.spec.max_length is not None:
            return plan.spec.max_length
    raise LookupError(f"{op.operation_id} has no bounded text field {wire!r}")


def _refused(detail: str) -> MaiaError:
    return MaiaError("validation_failed", f"--file: {detail}", {"path": "text", "detail": detail})


def _read_bounded(stream: BinaryIO, max_chars: int) -> bytes:
    limit = max_chars * BYTES_PER_CHARACTER
    data = stream.read(limit + 1)
    if len(data) > limit:
        raise _refused(f"more than {limit} bytes (the text takes at most {max_chars} characters)")
    return data


def _own_stdin() -> BinaryIO:
    # Python leaves sys.stdin None when the process started with descriptor 0 closed
    # (`maia ... --file - <&-`): a usage error, not an AttributeError traceback.
    if sys.stdin is None:
        raise _refused("- reads stdin, but stdin is closed; give a PATH or pipe the text in")
    return sys.stdin.buffer


def read_text_file(path: str, max_chars: int, stdin: BinaryIO | None = None) -> str:
    """The text in `path` (`-`: `stdin`, default this process's), read up to what
    `max_chars` characters can take. Blocking.

    Raises MaiaError(validation_failed) for a file that cannot be read, is too large or is
    not UTF-8 (exit 2)."""
    try:
        if path == "-":
            data = _read_bounded(stdin if stdin is not None else _own_stdin(), max_chars)
        else:
            with open(path, "rb") as stream:
                data = _read_bounded(stream, max_chars)
    except OSError as error:
        raise _refused(f"cannot read {path}: {error.strerror or error}") from None
    if not data:
        source = "stdin" if path == "-" else path
        raise _refused(f"{source} is empty; the prompt needs at least one character")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise _refused(f"{path} is not UTF-8 (byte {error.start})") from None


async def read_text_file_async(path: str, max_chars: int) -> str:
    """`read_text_file` in a worker thread, so a slow pipe does not stall the event loop
    (and Ctrl-C is not held up by a read that never ends: the thread is abandoned)."""
    return await anyio.to_thread.run_sync(read_text_file, path, max_chars, abandon_on_cancel=True)
