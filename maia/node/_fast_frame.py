"""The common frames read and written without wsproto's general code: one whole, masked
text frame in (`whole_text_frame`), one whole text frame out (`server_text_frame`).

Nearly every frame a client sends the API is one request: a single text frame, FIN set, no
extension, masked, under 64 KiB, arriving in one read. wsproto parses it through a buffer, a
header object, a masker, a message decoder and an incremental UTF-8 decoder (~20 us here);
`whole_text_frame` reads exactly that case in a few, and says None for anything else, which
then goes through wsproto as before: a fragment, a control frame, a frame split over reads or
sharing one, a longer length form, an unmasked frame (1002), a frame over the bound (1009),
text that is not UTF-8 (1007). It is only taken while wsproto holds nothing half-read (empty
buffer, no header, no message in progress), so skipping wsproto leaves its state as reading
the frame would have. Several whole frames in one read (a client with many requests in
flight) are read alike, one after the other (`whole_text_frames`); wsproto reads what the
first it declines leaves, from that byte on, as it would have after reading those frames.

Nearly every frame the API sends is one answer: a whole text message, unmasked (a server's),
no extension. wsproto writes it through its message state, an RSV check per extension and
two bytearray copies; `server_text_frame` writes the same bytes directly (a Hypothesis test
compares the two), and only while wsproto has no message half-sent.
"""

from __future__ import annotations

from typing import Any

from maia.core._ws_frames import FIN_TEXT as _FIN_TEXT
from maia.core._ws_frames import LONG as _LONG
from maia.core._ws_frames import MASKED as _MASKED
from maia.core._ws_frames import MEDIUM as _MEDIUM
from maia.core._ws_frames import SHORT_MAX as _SHORT_MAX
from maia.core._ws_frames import wsproto_idle


def _idle(connection: Any) -> bool:
    """Whether wsproto's frame parser holds nothing: no bytes, no header, no message."""
    return wsproto_idle(connection, client=False)


def whole_text_frame(data: bytes, connection: Any, max_bytes: int) -> str | None:
    """The text of `data` when it is exactly one whole masked text frame of at most
    `max_bytes` whose payload is UTF-8, and wsproto holds nothing half-read; else None."""
    if not _idle(connection):
        return None
    read = _one_frame(data, 0, max_bytes)
    return read[0] if read is not None and read[1] == len(data) else None


def whole_text_frames(data: bytes, connection: Any, max_bytes: int) -> tuple[list[str], int]:
    """The texts of the whole masked text frames (each as `whole_text_frame` takes one) at
    the start of `data`, and where the first byte they leave begins: what follows (part of
    a frame, another kind of frame, a frame it declines) is wsproto's to read. Nothing is
    taken unless wsproto holds nothing half-read."""
    texts: list[str] = []
    offset = 0
    if not _idle(connection):
        return texts, offset
    while offset < len(data):
        read = _one_frame(data, offset, max_bytes)
        if read is None:
            break
        texts.append(read[0])
        offset = read[1]
    return texts, offset


def _one_frame(data: bytes, start: int, max_bytes: int) -> tuple[str, int] | None:
    """(text, end) of the whole masked text frame at `data[start:]`, else None."""
    if len(data) - start < 6 or data[start] != _FIN_TEXT or not data[start + 1] & _MASKED:
        return None
    length = data[start + 1] & 0x7F
    offset = start + 2
    if length == _MEDIUM:
        length = int.from_bytes(data[offset : offset + 2], "big")
        offset += 2
        if length <= _SHORT_MAX:
            return None  # not the shortest form: wsproto decides
    elif length > _SHORT_MAX:
        return None  # the 64-bit form
    end = offset + 4 + length
    if length > max_bytes or len(data) < end:
        return None
    mask = data[offset : offset + 4]
    payload = data[offset + 4 : end]
    key = (mask * (length // 4 + 1))[:length]
    plain = (int.from_bytes(payload, "big") ^ int.from_bytes(key, "big")).to_bytes(length, "big")
    try:
        return plain.decode("utf-8"), end
    except UnicodeDecodeError:
        return None  # wsproto fails it with 1007


def server_text_frame(text: str) -> bytes:
    """One whole unmasked text frame carrying `text`, as a server sends it (RFC 6455 §5.2):
    what wsproto's `send(TextMessage(text))` writes when no extension is in use and no
    message is half-sent (`_StrictConnection.send` checks both), without its buffers."""
    payload = text.encode("utf-8")
    length = len(payload)
    if length <= _SHORT_MAX:
        return bytes((_FIN_TEXT, length)) + payload
    if length < 1 << 16:
        return bytes((_FIN_TEXT, _MEDIUM)) + length.to_bytes(2, "big") + payload
    return bytes((_FIN_TEXT, _LONG)) + length.to_bytes(8, "big") + payload
