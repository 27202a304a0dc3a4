"""The server half of an SDK connection's opening, for the tests whose loopback WebSocket
server is written by hand with wsproto over a trio stream."""

from __future__ import annotations

import orjson
import trio
from wsproto import WSConnection
from wsproto.events import AcceptConnection, Request, TextMessage

from .test_transport import HELLO


async def greet(stream: trio.SocketStream, ws: WSConnection) -> None:
    """Read the upgrade request and accept it, then read the hello and answer it."""
    while True:
        ws.receive_data(await stream.receive_some(65536))
        for event in ws.events():
            if isinstance(event, Request):
                await stream.send_all(ws.send(AcceptConnection()))
            elif isinstance(event, TextMessage):
                frame = orjson.loads(event.data)
                answer = {"id": frame["id"], "ok": True, "result": HELLO}
                await stream.send_all(ws.send(TextMessage(orjson.dumps(answer).decode())))
                return
