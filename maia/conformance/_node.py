"""One real Node for one fixture set: a fresh home in a private temporary folder, a planted
secret, the WebSocket connection the cases speak over, and everything the Node said.

The Node runs in this trio program (`serve_node`), listening on 127.0.0.1; its workers
are real subprocesses. Every frame received, every log record and every log file of the
home is kept (`Transcript`), for the redaction scan.
"""

from __future__ import annotations

import itertools
import logging
import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Final

import attrs
import orjson
import trio
from trio_websocket import WebSocketConnection, open_websocket_url

from maia.core import read_token
from maia.node import NodeConfig, NodeHome, serve_node
from maia.observe import OBSERVATIONS_PATH, SUBPROTOCOL
from maia.protocol import PROTOCOL_VERSION, REGISTRY

REQUEST_TIMEOUT_S: Final = 20.0
PLANTED_ENV: Final = "MAIA_CONFORMANCE_API_KEY"  # a credential-looking variable
PLANTED_WEBHOOK_ENV: Final = "MAIA_CONFORMANCE_WEBHOOK_SECRET"  # a webhook's whsec_ secret


@attrs.frozen
class Secrets:
    """The values no output, event or log line may contain."""

    api_key: str
    webhook: str

    @classmethod
    def planted(cls) -> Secrets:
        return cls("sk-conformance-" + secrets.token_hex(16), "whsec_" + secrets.token_hex(24))


@attrs.define
class Transcript:
    """What the Node said during a set: frames, log records (for the redaction scan)."""

    frames: list[tuple[str, str]] = attrs.field(factory=list)  # (method asked, answer)
    logs: list[str] = attrs.field(factory=list)
    received: list[str] = attrs.field(factory=list)  # by the loopback webhook receiver


class _Capture(logging.Handler):
    def __init__(self, transcript: Transcript) -> None:
        super().__init__(logging.DEBUG)
        self._transcript = transcript

    def emit(self, record: logging.LogRecord) -> None:
        self._transcript.logs.append(self.format(record))


class Connection:
    """One greeted `/api/v1` connection; `request` answers the whole response envelope."""

    def __init__(self, socket: WebSocketConnection, transcript: Transcript) -> None:
        self._socket = socket
        self._transcript = transcript
        self._ids = itertools.count(1)
        self.hello: dict[str, Any] = {}

    async def send_raw(self, frame: dict[str, Any]) -> dict[str, Any]:
        """Send one envelope as given (its id is set here) and read the answer to it."""
        request_id = next(self._ids)
        await self._socket.send_message(orjson.dumps({**frame, "id": request_id}).decode())
        with trio.fail_after(REQUEST_TIMEOUT_S):
            while True:
                text = await self._socket.get_message()
                self._transcript.frames.append((str(frame.get("method")), str(text)))
                answer: dict[str, Any] = orjson.loads(text)
                if answer.get("id") == request_id:
                    return answer

    async def request(self, method: str, params: Any) -> dict[str, Any]:
        return await self.send_raw({"method": method, "params": params})

    async def send_only(self, method: str, params: Any) -> None:
        """Send one request and leave its answer unread (`send_raw` skips it later)."""
        frame = {"id": next(self._ids), "method": method, "params": params}
        await self._socket.send_message(orjson.dumps(frame).decode())


async def _serve_receiver(listener: trio.SocketListener, transcript: Transcript) -> None:
    """A loopback webhook receiver: 204 to every request; what it received is kept."""

    async def answer(stream: trio.SocketStream) -> None:
        data = b""
        with trio.move_on_after(15):
            async with stream:
                while b"\r\n\r\n" not in data and len(data) < 1 << 20:
                    chunk = await stream.receive_some(65536)
                    if not chunk:
                        return
                    data += chunk
                head, _, body = data.partition(b"\r\n\r\n")
                length = next((int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                               if line.lower().startswith(b"content-length:")), 0)  # fmt: skip
                while len(body) < min(length, 1 << 20):
                    chunk = await stream.receive_some(65536)
                    if not chunk:
                        break
                    body += chunk
                transcript.received.append((head + b"\r\n\r\n" + body).decode("utf-8", "replace"))
                await stream.send_all(b"HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n")

    await trio.serve_listeners(answer, [listener])


@attrs.frozen
class LiveNode:
    url: str
    home: NodeHome
    token: str
    work: Path
    transcript: Transcript
    receiver_port: int = 0

    @property
    def port(self) -> int:
        return int(self.url.split(":")[2].split("/")[0])

    @asynccontextmanager
    async def connect(
        self, registry_digest: str | None = None, *, greet: bool = True
    ) -> AsyncIterator[Connection]:
        """A connection greeted with `registry_digest` (default: this registry's)."""
        headers = [(b"Authorization", f"Bearer {self.token}".encode())]
        async with open_websocket_url(self.url, extra_headers=headers) as socket:
            connection = Connection(socket, self.transcript)
            if not greet:
                yield connection
                return
            hello = {"protocol": PROTOCOL_VERSION,
                     "registryDigest": registry_digest or REGISTRY.digest}  # fmt: skip
            answer = await connection.request("node.hello", hello)
            if not answer.get("ok"):
                raise RuntimeError(f"node.hello failed: {answer}")
            connection.hello = answer["result"]
            yield connection

    async def observe(
        self, method: str, params: Any, registry_digest: str | None = None, count: int = 1
    ) -> list[dict[str, Any]]:
        """The first `count` answers to one subscribe request on `/api/v1/observations`
        (fewer when an error answer ends the stream).

        The socket starts with `node.hello` since registry 0.9.0; a Node that refuses the
        hello there (the older socket subscribed at once) gets the request first instead."""
        url = self.url.replace("/api/v1", OBSERVATIONS_PATH)
        headers = [(b"Authorization", f"Bearer {self.token}".encode())]
        greeting = {
            "protocol": PROTOCOL_VERSION,
            "registryDigest": registry_digest or REGISTRY.digest,
        }
        hello = {"id": 0, "method": "node.hello", "params": greeting}
        for greet in (True, False):
            async with open_websocket_url(
                url, subprotocols=[SUBPROTOCOL], extra_headers=headers
            ) as socket:
                with trio.fail_after(REQUEST_TIMEOUT_S):
                    if greet:
                        await socket.send_message(orjson.dumps(hello).decode())
                        greeted = orjson.loads(await socket.get_message())
                        self.transcript.frames.append(
                            ("node.hello", orjson.dumps(greeted).decode())
                        )
                        if not greeted.get("ok"):
                            continue
                    frame = {"id": 1, "method": method, "params": params}
                    await socket.send_message(orjson.dumps(frame).decode())
                    answers: list[dict[str, Any]] = []
                    while len(answers) < count and (not answers or answers[-1].get("ok")):
                        text = str(await socket.get_message())
                        self.transcript.frames.append((method, text))
                        answers.append(orjson.loads(text))
                return answers
        raise RuntimeError("unreachable: the second attempt returns or raises")

    def log_files(self) -> list[str]:
        return [p.read_text("utf-8", "replace") for p in sorted(self.home.root.rglob("*.log"))]


@asynccontextmanager
async def open_node(base: Path, config: dict[str, Any]) -> AsyncIterator[LiveNode]:
    """A Node on `base/home` with `config` as its config.jsonc; stopped on exit."""
    home = NodeHome(base / "home")
    home.root.mkdir(mode=0o700)
    (home.root / "config.jsonc").write_bytes(orjson.dumps(config))
    work = base / "work"
    work.mkdir(mode=0o700)
    transcript = Transcript()
    capture = _Capture(transcript)
    root = logging.getLogger()
    root.addHandler(capture)
    try:
        async with trio.open_nursery() as nursery:
            (listener,) = await trio.open_tcp_listeners(0, host="127.0.0.1")
            nursery.start_soon(_serve_receiver, listener, transcript)
            running = await nursery.start(serve_node, NodeConfig(home))
            port = listener.socket.getsockname()[1]
            try:
                yield LiveNode(
                    running.url, home, read_token(home.token_path), work, transcript, port
                )
            finally:
                nursery.cancel_scope.cancel()
    finally:
        root.removeHandler(capture)
