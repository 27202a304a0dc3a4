"""What the Node's and the SDK's fast frame paths share (`maia.node._fast_frame`,
`maia.client._fast_frame`): RFC 6455's header bytes for a whole text frame, and whether
wsproto holds nothing half-read, the one state in which a frame may be read without it."""

from __future__ import annotations

from typing import Any, Final

FIN_TEXT: Final = 0x81  # FIN, no RSV bits, opcode 1 (text)
MASKED: Final = 0x80
SHORT_MAX: Final = 125  # a length in the second byte
MEDIUM: Final = 126  # a 16-bit length follows
LONG: Final = 127  # a 64-bit length follows


def wsproto_idle(connection: Any, *, client: bool) -> bool:
    """Whether wsproto's frame parser of `connection` (a `wsproto.Connection`, the `client`
    side or the server's) holds nothing: no bytes, no header, no message, no extension."""
    proto = getattr(connection, "_proto", None)
    decoder = getattr(proto, "_frame_decoder", None)
    message = getattr(proto, "_message_decoder", None)
    buffer = getattr(decoder, "buffer", None)
    return (
        buffer is not None
        and len(buffer) == 0
        and getattr(decoder, "header", 1) is None
        and getattr(message, "opcode", 1) is None
        and not getattr(proto, "extensions", True)
        and getattr(proto, "client", None) is client
    )
