"""The SDK's fast frame read and write agree with wsproto: whatever it reads from a server,
a wsproto client reads the same; whatever it writes, wsproto writes for the same mask;
whatever it declines is left to wsproto from the first byte it declines."""

from __future__ import annotations

from typing import Any
from unittest import mock

from hypothesis import given
from hypothesis import strategies as st
from wsproto.events import TextMessage

from maia.client._fast_frame import client_text_frame, idle, whole_server_texts
from tests._wsproto_pair import plain_pair

MAX_BYTES = 70_000
TEXTS = (
    st.text(max_size=300)
    | st.text(min_size=120, max_size=70_000)
    | st.integers(65_530, 65_600).map(lambda n: "x" * n)
)


def _client_reads(data: bytes) -> list[Any]:
    """What a plain wsproto client makes of `data` (its events)."""
    client, _ = plain_pair()
    client.receive_data(data)
    return list(client.events())


@given(st.lists(TEXTS, min_size=1, max_size=3))
def test_whole_answers_read_as_wsproto_reads_them(texts: list[str]) -> None:
    """A server's text frames, each length form, several in one read: the fast read gives
    each text (up to the bound), as a wsproto client reads them."""
    _, server = plain_pair()
    data = b"".join(server.send(TextMessage(data=text)) for text in texts)
    client, _ = plain_pair()
    assert idle(client.connection)
    fast, taken = whole_server_texts(data, MAX_BYTES)
    assert fast == texts[: len(fast)]
    if all(len(text.encode()) <= MAX_BYTES for text in texts):
        assert taken == len(data)
    wsproto = [e.data for e in _client_reads(data[:taken]) if isinstance(e, TextMessage)]
    assert wsproto == fast


@given(st.binary(min_size=2, max_size=200), st.integers(0, 11), st.integers(0, 255))
def test_whatever_the_fast_read_takes_wsproto_takes_alike(
    payload: bytes, at: int, value: int
) -> None:
    """Any bytes near a frame (a valid one with one byte changed): what the fast read takes,
    a wsproto client reads as exactly those messages from the same bytes."""
    _, server = plain_pair()
    data = bytearray(server.send(TextMessage(data=payload.decode("latin-1"))))
    data[at % len(data)] = value
    texts, taken = whole_server_texts(bytes(data), MAX_BYTES)
    if texts:
        events = _client_reads(bytes(data[:taken]))
        assert events == [TextMessage(data=text) for text in texts]


def test_frames_it_declines_are_left_to_wsproto() -> None:
    """Half a frame, a masked frame, a fragment, a ping, invalid UTF-8, a frame over the
    bound, and a 16-bit length not in its shortest form: nothing is taken; a whole frame
    before any of them is taken alone; with part of a frame buffered, wsproto is not idle."""
    _, server = plain_pair()
    one = server.send(TextMessage(data="a"))
    client, _ = plain_pair()
    masked = client.send(TextMessage(data="a"))
    fragment = bytes([0x01, 1]) + b"a"
    ping = bytes([0x89, 0])
    not_utf8 = bytes([0x81, 1, 0xFF])
    long_form = bytes([0x81, 126, 0, 1]) + b"a"
    for declined in (one[:-1], masked, fragment, ping, not_utf8, long_form):
        assert whole_server_texts(declined, MAX_BYTES) == ([], 0)
        assert whole_server_texts(one + declined, MAX_BYTES) == (["a"], len(one))
    big = server.send(TextMessage(data="x" * 200))
    assert whole_server_texts(big, 100) == ([], 0)
    client.receive_data(one[:1])  # wsproto now holds a half-read frame
    assert not idle(client.connection)


@given(TEXTS, st.binary(min_size=4, max_size=4))
def test_a_request_is_written_as_wsproto_writes_it(text: str, mask: bytes) -> None:
    """A client's text frame in each length form, with the same 4-byte mask: the fast write
    gives wsproto's bytes, and a wsproto server reads the same text back."""
    client, server = plain_pair()
    with mock.patch("wsproto.frame_protocol.os.urandom", return_value=mask):
        expected = bytes(client.send(TextMessage(data=text)))
    assert client_text_frame(text.encode("utf-8"), mask) == expected
    server.receive_data(client_text_frame(text.encode("utf-8")))
    received = [e for e in server.events() if isinstance(e, TextMessage)]
    assert "".join(e.data for e in received) == text
