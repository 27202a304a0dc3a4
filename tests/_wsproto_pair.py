"""A wsproto client and server past the opening handshake, with no socket: for the tests that
hold the fast frame paths (the Node's and the SDK's) against wsproto, byte for byte."""

from __future__ import annotations

from typing import TypeVar

from wsproto import ConnectionType, WSConnection
from wsproto.events import AcceptConnection, Request

Server = TypeVar("Server", bound=WSConnection)


def handshaken(server: Server) -> tuple[WSConnection, Server]:
    """A new wsproto client and `server`, each having read the other's half of an upgrade
    to /api/v1 (both open, nothing buffered)."""
    client = WSConnection(ConnectionType.CLIENT)
    server.receive_data(client.send(Request(host="127.0.0.1", target="/api/v1")))
    list(server.events())
    client.receive_data(server.send(AcceptConnection()))
    list(client.events())
    return client, server


def plain_pair() -> tuple[WSConnection, WSConnection]:
    """`handshaken` with a plain wsproto server."""
    return handshaken(WSConnection(ConnectionType.SERVER))
