"""The SDK's common frames read and written without wsproto's general code: whole
unmasked text frames in (`whole_server_texts`), one masked text frame out
(`client_text_frame`).

Nearly every frame the Node sends the SDK is one answer: a single text frame, FIN set, no
extension, unmasked (a server's), arriving whole in one read. wsproto parses it through a
buffer, a header object, a message decoder and an incremental UTF-8 decoder, then an event
per frame (~25 us a turn's answer); `whole_server_texts` reads exactly that case, and only
while wsproto holds nothing half-read (empty buffer, no header, no message in progress), so
skipping wsproto leaves its state as reading those frames would have. Anything else stays
wsproto's, from the first byte it declines on: a fragment, a control frame, a frame split
over reads, a length not in its shortest form, a masked frame, a frame over the message
bound (closed 1009 by the transport), text that is not UTF-8.

Nearly every frame the SDK sends is one request: a whole text message, masked with 4
random bytes (RFC 6455 §5.3; wsproto takes them from `os.urandom` too), no extension.
`client_text_frame` writes the bytes wsproto's `send(TextMessage(...))` writes for that
mask (a Hypothesis test compares the two), from the UTF-8 payload orjson already made.
"""

from __future__ import annotations

import os
from typing import Any

from maia.core._ws_frames import FIN_TEXT as _FIN_TEXT
from maia.core._ws_frames import LONG as _LONG
from maia.core._ws_frames import MASKED as _MASKED
from maia.core._ws_frames import MEDIUM as _MEDIUM
from maia.core._ws_frames import SHORT_MAX as _SHORT_MAX
from maia.core._ws_frames import wsproto_idle


def idle(connection: Any) -> bool:
    """Whether wsproto's frame parser holds nothing: no bytes, no header, no message."""
    return wsproto_idle(connection, client=True)


def whole_server_texts(data: bytes, max_bytes: int) -> tuple[list[str], int]:
    """The texts of the whole unmasked text frames of at most `max_bytes` at the start of
    `data`, and where the first byte they leave begins (the rest is wsproto's to read).
    The caller checks `idle` first."""
    texts: list[str] = []
    offset, size = 0, len(data)
    while size - offset >= 2:
        if data[offset] != _FIN_TEXT:
            break
        length = data[offset + 1]  # the mask bit set (a masked frame) reads as > 127
        start = offset + 2
        if length == _MEDIUM:
            length = int.from_bytes(data[start : start + 2], "big")
            start += 2
            if length <= _SHORT_MAX:
                break  # not the shortest form: wsproto refuses it
        elif length == _LONG:
            length = int.from_bytes(data[start : start + 8], "big")
            start += 8
            if length < 1 << 16 or length >= 1 << 63:
                break  # not the shortest form, or the reserved top bit: wsproto's
        elif length > _SHORT_MAX:
            break  # masked
        end = start + length
        if length > max_bytes or end > size:
            break
        try:
            texts.append(data[start:end].decode("utf-8"))
        except UnicodeDecodeError:
            break  # wsproto fails it with 1007
        offset = end
    return texts, offset


def client_text_frame(payload: bytes, mask: bytes | None = None) -> bytes:
    """One whole masked text frame carrying the UTF-8 `payload`, as a client sends it
    (RFC 6455 §5.2), masked with `mask` (4 bytes; random by default)."""
    key = os.urandom(4) if mask is None else mask
    length = len(payload)
    if length <= _SHORT_MAX:
        header = bytes((_FIN_TEXT, _MASKED | length))
    elif length < 1 << 16:
        header = bytes((_FIN_TEXT, _MASKED | _MEDIUM)) + length.to_bytes(2, "big")
    else:
        header = bytes((_FIN_TEXT, _MASKED | _LONG)) + length.to_bytes(8, "big")
    if not length:
        return header + key
    stretched = (key * (length // 4 + 1))[:length]
    masked = (int.from_bytes(payload, "big") ^ int.from_bytes(stretched, "big")).to_bytes(
        length, "big"
    )
    return header + key + masked
