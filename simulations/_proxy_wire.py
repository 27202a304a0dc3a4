"""The fault proxy's wire: the HTTP upgrade passed through, and WebSocket frames parsed
into whole messages and written again, with wsproto's frame protocol.

The upgrade request and response travel byte for byte, except `Sec-WebSocket-Extensions`,
which is removed from the request so no extension (permessage-deflate) is negotiated and
every frame stays plain. After the upgrade each direction has a reader (it unmasks the
client's frames and joins fragments into one message, within the message bound) and a
writer (it masks what goes to the server, as RFC 6455 requires, and not what goes back).
"""

from __future__ import annotations

import attrs
import trio
from wsproto.frame_protocol import CloseReason, FrameProtocol, Opcode, ParseFailed

MAX_HEAD_BYTES = 16 * 1024
RECEIVE_BYTES = 64 * 1024


class WireError(Exception):
    """The peer broke the protocol or a bound; the connection is closed."""


async def read_head(stream: trio.abc.ReceiveStream, timeout_s: float) -> tuple[bytes, bytes]:
    """An HTTP head (through the blank line) and whatever bytes came after it."""
    buffer = b""
    with trio.move_on_after(timeout_s):
        while len(buffer) <= MAX_HEAD_BYTES:
            end = buffer.find(b"\r\n\r\n")
            if end >= 0:
                return buffer[: end + 4], buffer[end + 4 :]
            data = await stream.receive_some(RECEIVE_BYTES)
            if not data:
                raise WireError("the stream ended inside the HTTP head")
            buffer += data
        raise WireError(f"an HTTP head longer than {MAX_HEAD_BYTES} bytes")
    raise WireError(f"no complete HTTP head within {timeout_s} s")


def without_extensions(head: bytes) -> bytes:
    lines = head.split(b"\r\n")
    kept = [line for line in lines if not line.lower().startswith(b"sec-websocket-extensions:")]
    return b"\r\n".join(kept)


def upgraded(head: bytes) -> bool:
    return head.startswith(b"HTTP/1.1 101 ")


@attrs.frozen
class Message:
    """One whole WebSocket message or control frame."""

    kind: str  # text, binary, ping, pong, close
    payload: bytes | str
    close_code: int | None = None

    @property
    def size(self) -> int:
        return len(self.payload.encode() if isinstance(self.payload, str) else self.payload)


_KINDS = {Opcode.PING: "ping", Opcode.PONG: "pong"}


@attrs.define
class FrameReader:
    """Frames from one side, joined into messages no larger than `max_message_bytes`."""

    from_client: bool
    max_message_bytes: int
    _protocol: FrameProtocol = attrs.field(init=False)
    _parts: list[bytes | str] = attrs.field(init=False, factory=list)
    _size: int = attrs.field(init=False, default=0)

    def __attrs_post_init__(self) -> None:
        # A client's frames are masked: they are parsed as a server parses them.
        self._protocol = FrameProtocol(client=not self.from_client, extensions=[])

    def feed(self, data: bytes) -> list[Message]:
        self._protocol.receive_bytes(data)
        messages: list[Message] = []
        try:
            for frame in self._protocol.received_frames():
                if frame.opcode is Opcode.CLOSE:
                    assert isinstance(frame.payload, tuple)
                    code, reason = frame.payload
                    messages.append(Message("close", reason, int(code)))
                elif frame.opcode in _KINDS:
                    assert isinstance(frame.payload, bytes)
                    messages.append(Message(_KINDS[frame.opcode], frame.payload))
                else:
                    message = self._join(frame.opcode, frame.payload, frame.message_finished)
                    if message is not None:
                        messages.append(message)
        except ParseFailed as error:
            raise WireError(f"an invalid frame: {error}") from None
        return messages

    def _join(
        self, opcode: Opcode, payload: bytes | str | tuple[int, str], finished: bool
    ) -> Message | None:
        assert not isinstance(payload, tuple)
        self._parts.append(payload)
        self._size += len(payload)
        if self._size > self.max_message_bytes:
            raise WireError(f"a message over {self.max_message_bytes} bytes")
        if not finished:
            return None
        parts, self._parts, self._size = self._parts, [], 0
        if isinstance(parts[0], str):
            return Message("text", "".join(str(p) for p in parts))
        return Message("binary", b"".join(p for p in parts if isinstance(p, bytes)))


@attrs.define
class FrameWriter:
    """Frames for one side: masked toward the server, plain toward the client."""

    to_server: bool
    _protocol: FrameProtocol = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self._protocol = FrameProtocol(client=self.to_server, extensions=[])

    def encode(self, message: Message) -> bytes:
        payload = message.payload
        if message.kind == "close":
            code = message.close_code
            if code == CloseReason.NO_STATUS_RCVD:
                return bytes(self._protocol.close())
            return bytes(self._protocol.close(code, str(payload) or None))
        if message.kind in ("ping", "pong"):
            assert isinstance(payload, bytes)
            encode = self._protocol.ping if message.kind == "ping" else self._protocol.pong
            return bytes(encode(payload))
        return bytes(self._protocol.send_data(payload, fin=True))
