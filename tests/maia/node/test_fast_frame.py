"""The fast frame read and write agree with wsproto: whatever it reads, wsproto reads the
same, whatever it writes, wsproto writes the same, and whatever it declines goes through
wsproto (hostile frames: test_hostile_frames)."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from wsproto import WSConnection
from wsproto.events import (
    BytesMessage,
    CloseConnection,
    Ping,
    TextMessage,
)
from wsproto.utilities import RemoteProtocolError

from maia.node._fast_frame import server_text_frame, whole_text_frame
from maia.node._websocket import _StrictConnection
from tests._wsproto_pair import handshaken, plain_pair

MAX_BYTES = 70_000


def _wsproto_reads(data: bytes) -> list[Any]:
    """What a plain wsproto server makes of `data` (its events, or the failure)."""
    _, server = plain_pair()
    server.receive_data(data)
    return list(server.events())


def _masked_frame(text: str) -> bytes:
    client, _ = plain_pair()
    return client.send(TextMessage(data=text))


@given(st.text(max_size=300) | st.text(min_size=126, max_size=66_000).map(lambda t: t[:66_000]))
def test_a_whole_text_frame_reads_as_wsproto_reads_it(text: str) -> None:
    """A client's text frame, short or 16-bit length form: the fast read gives its text,
    and wsproto gives one finished TextMessage with the same text."""
    data = _masked_frame(text)
    _, server = plain_pair()
    fast = whole_text_frame(data, server.connection, MAX_BYTES)
    if len(text.encode()) > MAX_BYTES:
        assert fast is None
        return
    assert fast == text
    assert _wsproto_reads(data) == [TextMessage(data=text)]


@given(st.binary(min_size=6, max_size=200), st.integers(0, 9), st.integers(0, 255))
def test_whatever_the_fast_read_takes_wsproto_takes_alike(
    payload: bytes, at: int, value: int
) -> None:
    """Any bytes, frame-like or not (a valid frame with one byte changed): when the fast read
    gives a text, wsproto reads exactly that one message from the same bytes."""
    data = bytearray(_masked_frame(payload.decode("latin-1")))
    data[at % len(data)] = value
    _, server = plain_pair()
    fast = whole_text_frame(bytes(data), server.connection, MAX_BYTES)
    if fast is not None:
        assert _wsproto_reads(bytes(data)) == [TextMessage(data=fast)]


def test_frames_it_declines_go_through_wsproto() -> None:
    """Two frames in one read, half a frame, an unmasked frame and invalid UTF-8 are left to
    wsproto; with part of a frame already buffered, so is a whole one."""
    one = _masked_frame("a")
    client, server = handshaken(_StrictConnection(MAX_BYTES))
    assert whole_text_frame(one + one, server.connection, MAX_BYTES) is None
    assert whole_text_frame(one[:-1], server.connection, MAX_BYTES) is None
    unmasked = bytes([0x81, 1]) + b"a"
    assert whole_text_frame(unmasked, server.connection, MAX_BYTES) is None
    bad = bytearray(one)
    bad[-1] = bad[2] ^ 0xFF  # unmasks to the byte 0xFF, not UTF-8
    assert whole_text_frame(bytes(bad), server.connection, MAX_BYTES) is None
    server.receive_data(one[:3])  # wsproto now holds a half-read frame
    assert whole_text_frame(one, server.connection, MAX_BYTES) is None
    server.receive_data(one[3:])
    assert [e for e in server.events() if isinstance(e, TextMessage)] == [TextMessage(data="a")]
    assert client is not None


@given(
    st.text(max_size=300)
    | st.text(min_size=120, max_size=70_000)
    | st.integers(60_000, 70_000).map(lambda n: "x" * n)
)
def test_an_answer_is_written_as_wsproto_writes_it(text: str) -> None:
    """A server's text answer, in each length form (7-bit, 16-bit, 64-bit): the fast write
    gives wsproto's bytes, and a wsproto client reads the same text back."""
    client, strict = handshaken(_StrictConnection(MAX_BYTES))
    _, plain = plain_pair()
    data = strict.send(TextMessage(data=text))
    assert data == plain.send(TextMessage(data=text))
    assert server_text_frame(text) == data
    client.receive_data(data)
    received = [e for e in client.events() if isinstance(e, TextMessage)]
    assert "".join(e.data for e in received) == text


def test_a_half_sent_message_is_left_to_wsproto() -> None:
    """With a fragment sent (message_finished False), the next text is a continuation frame:
    the fast write steps aside and wsproto writes it."""
    _, strict = handshaken(_StrictConnection(MAX_BYTES))
    _, plain = plain_pair()
    for connection in (strict, plain):
        connection.send(TextMessage(data="a", message_finished=False))
    assert strict.send(TextMessage(data="b")) == plain.send(TextMessage(data="b"))
    assert strict.send(TextMessage(data="b"))[0] == 0x81  # a new message: fast again


def _events(server: WSConnection, chunks: list[bytes]) -> list[Any]:
    out: list[Any] = []
    for chunk in chunks:
        try:
            server.receive_data(chunk)
        except RemoteProtocolError as error:  # _StrictConnection raises wsproto's failure
            out.extend(e for e in server.events() if not isinstance(e, CloseConnection))
            out.append(("failed", error.event_hint))
            return out
        out.extend(e for e in server.events() if not isinstance(e, CloseConnection))
    return out


@given(
    st.lists(st.text(max_size=200), min_size=1, max_size=6),
    st.sampled_from(["", "ping", "half", "bad-utf8", "binary"]),
    st.integers(0, 10_000),
)
def test_frames_sharing_reads_read_as_wsproto_reads_them(
    texts: list[str], tail: str, cut: int
) -> None:
    """Whole text frames back to back (then a ping, half a frame, a frame that is not UTF-8 or
    a binary one), fed in one read or cut in two anywhere: the strict connection yields the
    messages wsproto yields, in order, and fails where it fails."""
    client, _ = plain_pair()
    data = b"".join(client.send(TextMessage(data=text)) for text in texts)
    if tail == "ping":
        data += client.send(Ping(b"p"))
    elif tail == "half":
        data += client.send(TextMessage(data="half a frame"))[:-3]
    elif tail == "bad-utf8":
        bad = bytearray(client.send(TextMessage(data="a")))
        bad[-1] = bad[2] ^ 0xFF  # unmasks to the byte 0xFF
        data += bytes(bad)
    elif tail == "binary":
        data += client.send(BytesMessage(data=b"\x00\x01"))
    at = cut % (len(data) + 1)
    for chunks in ([data], [data[:at], data[at:]]):
        _, strict = handshaken(_StrictConnection(MAX_BYTES))
        _, plain = plain_pair()
        strict_events = _events(strict, [c for c in chunks if c])
        plain_events = _events(plain, [c for c in chunks if c])
        if strict_events and isinstance(strict_events[-1], tuple):
            assert tail == "bad-utf8"
            assert strict_events[-1][1].code == 1007
            strict_events = strict_events[:-1]
        messages = [e for e in plain_events if isinstance(e, (TextMessage, BytesMessage))]
        got = [e for e in strict_events if isinstance(e, (TextMessage, BytesMessage))]
        assert _joined(got) == _joined(messages)


def _joined(events: list[Any]) -> list[Any]:
    """Messages as (kind, whole data): wsproto may hand a message over in pieces."""
    out: list[Any] = []
    pending: list[Any] = []
    for event in events:
        pending.append(event.data)
        if event.message_finished:
            kind = "text" if isinstance(event, TextMessage) else "bytes"
            out.append((kind, "".join(pending) if kind == "text" else b"".join(pending)))
            pending = []
    return out
