"""The SDK against a loopback peer that never answers: a listener that accepts the TCP
connection and says nothing, and one that answers the upgrade's 101 and then nothing.
Both clients (async under trio and asyncio, and the blocking one) must give up within
their timeout with the same typed `MaiaError`, as docs/node.md promises ("the same typed
errors"): `unavailable` for an upgrade never answered, `deadline_exceeded` for a hello
never answered."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress

import pytest
import trio

from maia.client import MaiaError, connect_sync, open_client

TOKEN = "ab" * 32
TIMEOUT_S = 0.5
_GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


def _say_nothing(connection: socket.socket) -> None:
    connection.recv(65536)


def _answer_the_upgrade_only(connection: socket.socket) -> None:
    head = b""
    while b"\r\n\r\n" not in head and len(head) < 65536:
        chunk = connection.recv(4096)
        if not chunk:
            return
        head += chunk
    key = next(
        line.split(b":", 1)[1].strip()
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"sec-websocket-key")
    )
    accept = base64.b64encode(hashlib.sha1(key + _GUID).digest())
    connection.sendall(
        b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
        b"Connection: Upgrade\r\nSec-WebSocket-Accept: " + accept + b"\r\n\r\n"
    )


@contextmanager
def silent_peer(behaviour: Callable[[socket.socket], None]) -> Iterator[str]:
    """A loopback listener whose every connection gets `behaviour` and is then held open
    (never answered) until the test ends; yields its ws:// URL."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.2)
    held: list[socket.socket] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                connection, _ = listener.accept()
            except TimeoutError:
                continue
            connection.settimeout(10)
            held.append(connection)
            with suppress(OSError):
                behaviour(connection)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"ws://127.0.0.1:{listener.getsockname()[1]}/api/v1"
    finally:
        stop.set()
        thread.join(timeout=10)
        for connection in held:
            connection.close()
        listener.close()


async def _open_async(url: str) -> None:
    async with open_client(url, token=TOKEN, timeout_s=TIMEOUT_S):
        raise AssertionError("connected to a peer that never answered")


PEERS = [
    pytest.param(_say_nothing, "unavailable", id="upgrade-unanswered"),
    pytest.param(_answer_the_upgrade_only, "deadline_exceeded", id="hello-unanswered"),
]


@pytest.mark.parametrize(("behaviour", "code"), PEERS)
def test_the_async_client_gives_up_typed_under_trio_and_asyncio(
    behaviour: Callable[[socket.socket], None], code: str
) -> None:
    """open_client(timeout_s=0.5) raises MaiaError(code) under trio and under asyncio."""
    with silent_peer(behaviour) as url:
        with pytest.raises(MaiaError) as under_trio:
            trio.run(_open_async, url)
        with pytest.raises(MaiaError) as under_asyncio:
            asyncio.run(_open_async(url))
    assert under_trio.value.code == code
    assert under_asyncio.value.code == code


def test_the_blocking_client_gives_up_on_an_unanswered_hello_typed() -> None:
    """connect_sync(timeout_s=0.5) after a 101 and no hello answer: deadline_exceeded."""
    with (
        silent_peer(_answer_the_upgrade_only) as url,
        pytest.raises(MaiaError) as raised,
        connect_sync(url, token=TOKEN, timeout_s=TIMEOUT_S),
    ):
        raise AssertionError("connected to a peer that never answered")
    assert raised.value.code == "deadline_exceeded"


def test_the_blocking_client_gives_up_on_an_unanswered_upgrade_typed() -> None:
    """connect_sync(timeout_s=0.5) with the upgrade never answered: MaiaError unavailable
    (retryable), as open_client says."""
    with (
        silent_peer(_say_nothing) as url,
        pytest.raises(MaiaError) as raised,
        connect_sync(url, token=TOKEN, timeout_s=TIMEOUT_S),
    ):
        raise AssertionError("connected to a peer that never answered")
    assert raised.value.code == "unavailable"
    assert raised.value.retryable is True
