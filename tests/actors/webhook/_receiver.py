"""A real HTTP receiver on 127.0.0.1 for webhook tests (h11 on trio), and connector doubles.

`Receiver` records every request it gets (headers lower-cased, the raw body) and answers each
with the next status of its script (the last one repeats); a status of None never answers
(a receiver that hangs). Each request is verified with the `standardwebhooks` reference
library when a secret is given; a delivery that does not verify is recorded as unverified.
"""

# ruff: noqa: ASYNC109  (httpcore's network backend interface takes `timeout` arguments)

from __future__ import annotations

import ipaddress
from collections.abc import Mapping, Sequence

import attrs
import h11
import httpcore
import trio
from standardwebhooks import Webhook
from standardwebhooks.exceptions import WebhookVerificationError

from actors.webhook import Resolver

MAX_REQUEST_BYTES = 1 << 20


@attrs.define
class Received:
    method: str
    target: str
    headers: dict[str, str]
    body: bytes
    verified: bool | None  # None when no secret was given


@attrs.define
class Receiver:
    """Answers with `script` in order (the last repeats); extra headers go with every answer."""

    script: list[int | None] = attrs.field(factory=lambda: [204])
    extra_headers: list[tuple[str, str]] = attrs.field(factory=list)
    secret: str | None = None
    received: list[Received] = attrs.field(factory=list)
    port: int = 0
    arrived: trio.Event = attrs.field(factory=trio.Event)

    def next_status(self) -> int | None:
        return self.script.pop(0) if len(self.script) > 1 else self.script[0]

    async def serve(self, *, task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED) -> None:
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        self.port = listeners[0].socket.getsockname()[1]
        task_status.started(self.port)
        await trio.serve_listeners(self._handle, listeners)

    async def _handle(self, stream: trio.SocketStream) -> None:
        with trio.move_on_after(60):
            async with stream:
                await self._exchange(stream)

    async def _exchange(self, stream: trio.SocketStream) -> None:
        conn = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_REQUEST_BYTES)
        request: h11.Request | None = None
        body = b""
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                data = await stream.receive_some(65536)
                if not data:
                    return
                conn.receive_data(data)
                continue
            if isinstance(event, h11.Request):
                request = event
            elif isinstance(event, h11.Data):
                body += event.data
                if len(body) > MAX_REQUEST_BYTES:
                    return
            elif isinstance(event, h11.EndOfMessage):
                break
            else:
                return
        assert request is not None
        headers = {k.decode().lower(): v.decode() for k, v in request.headers}
        verified: bool | None = None
        if self.secret is not None:
            try:
                Webhook(self.secret).verify(body, headers)
                verified = True
            except WebhookVerificationError:
                verified = False
        self.received.append(
            Received(request.method.decode(), request.target.decode(), headers, body, verified)
        )
        self.arrived.set()
        self.arrived = trio.Event()
        status = self.next_status()
        if status is None:
            await trio.sleep_forever()
        answer = h11.Response(
            status_code=status, headers=[("content-length", "0"), *self.extra_headers]
        )
        await stream.send_all(conn.send(answer) + conn.send(h11.EndOfMessage()))

    async def wait_for(self, count: int, timeout_s: float = 30.0) -> None:
        """Wait until `count` requests arrived (bounded)."""
        with trio.fail_after(timeout_s):
            while len(self.received) < count:
                await self.arrived.wait()


class RefusingConnector:
    """A connector double: records every attempt and refuses it; it never opens a socket."""

    def __init__(self) -> None:
        self.attempts: list[tuple[str, int]] = []

    async def connect(
        self, address: str, port: int, timeout: float | None
    ) -> httpcore.AsyncNetworkStream:
        self.attempts.append((address, port))
        raise httpcore.ConnectError(f"test double refuses {address}:{port}")


class LoopbackOnlyConnector:
    """The real TCP connector, refusing (before any packet) every address off loopback, so a
    test cannot reach past 127.0.0.0/8 or ::1 even when the guard under test is broken."""

    def __init__(self) -> None:
        self.attempts: list[tuple[str, int]] = []
        self._backend = httpcore.AnyIOBackend()

    async def connect(
        self, address: str, port: int, timeout: float | None
    ) -> httpcore.AsyncNetworkStream:
        self.attempts.append((address, port))
        if not ipaddress.ip_address(address).is_loopback:
            raise httpcore.ConnectError(f"tests never leave loopback: {address}")
        return await self._backend.connect_tcp(address, port, timeout=timeout)


def static_resolver(table: Mapping[str, Sequence[str]]) -> Resolver:
    """A resolver that answers from `table` and never sends a query (unknown: OSError)."""

    async def resolve(host: str, port: int) -> Sequence[str]:
        await trio.lowlevel.checkpoint()
        if host not in table:
            raise OSError(f"{host}: no such test name")
        return table[host]

    return resolve
