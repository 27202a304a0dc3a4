"""`turn send SESSION --file PATH`: a prompt read from a file, or from stdin for `-`.

A long prompt can't be an argument (the kernel caps argv; a shell mangles quotes), so the
text comes from a file. Reading is bounded: never more than the op's text limit in bytes
(4 bytes a character) plus one, so a huge file is refused without being held in memory. The
text must be UTF-8; it is sent exactly as read (a trailing newline included). The Node
then checks the length as it checks any `turn.send` (`validation_failed` naming `text`).
"""

from __future__ import annotations

import sys
from typing import BinaryIO, Final

import anyio

from maia.core._limits import MAX_TURN_TEXT_LENGTH
from maia.protocol import MaiaError

READ_LIMIT_BYTES: Final = MAX_TURN_TEXT_LENGTH * 4  # the most bytes a valid text can take


def _refused(detail: str) -> MaiaError:
    return MaiaError("validation_failed", f"--file: {detail}", {"path": "text", "detail": detail})


def _read_bounded(stream: BinaryIO) -> bytes:
    data = stream.read(READ_LIMIT_BYTES + 1)
    if len(data) > READ_LIMIT_BYTES:
        raise _refused(f"more than {READ_LIMIT_BYTES} bytes (the text takes at most "
                       f"{MAX_TURN_TEXT_LENGTH} characters)")  # fmt: skip
    return data


def read_text_file(path: str, stdin: BinaryIO | None = None) -> str:
    """The text in `path` (`-`: `stdin`, default this process's). Blocking.

    Raises MaiaError(validation_failed) for a file that cannot be read, is too large or is
    not UTF-8 (exit 2)."""
    try:
        if path == "-":
            data = _read_bounded(stdin if stdin is not None else sys.stdin.buffer)
        else:
            with open(path, "rb") as stream:
                data = _read_bounded(stream)
    except OSError as error:
        raise _refused(f"cannot read {path}: {error.strerror or error}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise _refused(f"{path} is not UTF-8 (byte {error.start})") from None


async def read_text_file_async(path: str) -> str:
    """`read_text_file` in a worker thread, so a slow pipe does not stall the event loop
    (and Ctrl-C is not held up by a read that never ends: the thread is abandoned)."""
    return await anyio.to_thread.run_sync(read_text_file, path, abandon_on_cancel=True)
