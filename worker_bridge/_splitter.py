"""A bounded NDJSON line splitter that scans every byte once.

Pipes deliver arbitrary chunks, not lines. The splitter keeps one buffer, remembers how far
it has searched for a newline, and refuses a line longer than the limit as soon as the
buffer shows it (without waiting for the newline), so a peer that never sends one costs
bounded memory and linear time.
"""

from __future__ import annotations

from ._errors import RemoteProtocolError
from ._limits import MAX_FRAME_BYTES


class LineSplitter:
    """Feed bytes with `feed`; take complete lines (without the newline) with `next_line`."""

    def __init__(self, max_line: int = MAX_FRAME_BYTES) -> None:
        self._buffer = bytearray()
        self._start = 0  # first byte of the current line
        self._scanned = 0  # bytes before this index hold no newline of the current line
        self._max = max_line
        self._eof = False

    def feed(self, data: bytes) -> None:
        """Append bytes. Empty bytes mean end of stream."""
        if not data:
            self._eof = True
            return
        self._buffer += data

    def next_line(self) -> bytes | None:
        """The next complete line, or None if more bytes are needed.

        Raises `RemoteProtocolError` for a line over the limit, or a partial line at end of
        stream.
        """
        index = self._buffer.find(b"\n", self._scanned)
        if index < 0:
            self._scanned = len(self._buffer)
            pending = len(self._buffer) - self._start
            if pending > self._max:
                raise RemoteProtocolError(f"a line exceeds {self._max} bytes before its newline")
            if self._eof and pending:
                raise RemoteProtocolError(f"the stream ended inside a frame ({pending} bytes)")
            self._compact()
            return None
        line = bytes(self._buffer[self._start : index])
        self._start = self._scanned = index + 1
        if len(line) > self._max:
            raise RemoteProtocolError(f"a line of {len(line)} bytes exceeds {self._max} bytes")
        if self._start > 65536 and self._start * 2 > len(self._buffer):
            self._compact()
        return line

    @property
    def at_eof(self) -> bool:
        """Whether end of stream was fed and every complete line has been taken."""
        return self._eof and self._start == len(self._buffer)

    @property
    def buffered(self) -> int:
        return len(self._buffer) - self._start

    def _compact(self) -> None:
        if self._start:
            del self._buffer[: self._start]
            self._scanned -= self._start
            self._start = 0
