"""A fault-injecting WebSocket proxy for tests on loopback: frames delayed, lost, duplicated,
reordered, partitioned both ways or one way, switched while traffic flows.

    async with trio.open_nursery() as nursery:
        proxy = await start_proxy(nursery, target_port=control_port, seed=7)
        ...  # the Execution Node dials proxy.url instead of the Control Node
        proxy.partition(one_way="to_control")
        proxy.heal()
        proxy.close()

It listens on and forwards to loopback IP literals only (`NotLoopback` otherwise). The
upgrade passes through; then every WebSocket message is parsed (`_proxy_wire`), given a
seeded fate (`_proxy_link`), recorded, and queued for its sender (`_proxy_outbox`), by
the connection's relay (`_proxy_relay`). A Close
frame and the end of a TCP stream always pass, after what is queued, so a test can end; a
connection opened while a partition stands waits (at most `hold_timeout_s`) for the heal.
Every wait has a bound, and the whole proxy stops serving after `lifetime_s`.
"""

from __future__ import annotations

import itertools

import attrs
import trio

from maia.core import Clock, SystemClock

from ._proxy_link import (
    Decision,
    Direction,
    LinkFaults,
    ProxyError,
    ProxyEvent,
    Switchboard,
    loopback_host,
)
from ._proxy_relay import BROKEN, Link, ProxySettings, Relay
from ._proxy_wire import Message
from ._trace import TraceWriter


@attrs.define(eq=False)
class LoopbackProxy:
    target_port: int
    seed: int
    target_host: str = "127.0.0.1"
    listen_host: str = "127.0.0.1"
    settings: ProxySettings = attrs.Factory(ProxySettings)
    clock: Clock = attrs.Factory(SystemClock)
    sink: TraceWriter | None = None
    port: int = 0
    switches: Switchboard = attrs.Factory(Switchboard)
    events: list[ProxyEvent] = attrs.Factory(list)
    trace_overflow: int = 0
    _numbers: itertools.count[int] = attrs.Factory(lambda: itertools.count(1))
    _live: dict[int, trio.CancelScope] = attrs.Factory(dict)
    _scope: trio.CancelScope = attrs.Factory(trio.CancelScope)
    _relay: Relay = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        loopback_host("target_host", self.target_host)
        loopback_host("listen_host", self.listen_host)
        if not 0 < self.target_port < 65_536:
            raise ProxyError("target_port", f"{self.target_port} is not a TCP port")
        self._relay = Relay(
            self.target_host,
            self.target_port,
            self.seed,
            self.settings,
            self.switches,
            self._record,
        )

    @property
    def url(self) -> str:
        return f"ws://{self.listen_host}:{self.port}"

    # What a test turns ------------------------------------------------------------------

    def set_faults(
        self,
        direction: Direction | str | None = None,
        *,
        delay_ms: tuple[int, int] = (0, 0),
        loss: float = 0.0,
        duplicate: float = 0.0,
        reorder: float = 0.0,
    ) -> None:
        """Set one direction's knobs (both when `direction` is None)."""
        self.switches.set_faults(direction, LinkFaults(delay_ms, loss, duplicate, reorder))

    def partition(self, one_way: Direction | str | None = None) -> None:
        """Drop every frame both ways, or only toward `one_way` ("to_control", "to_node")."""
        self.switches.partition(one_way)

    def drop_containing(self, direction: Direction | str, text: str | None) -> None:
        """Lose every text message toward `direction` that contains `text` (recorded as
        lost); None stops it, as does `heal`."""
        self.switches.drop_containing(direction, text)

    def heal(self) -> None:
        """End every partition, drop and fault: the link is clean again."""
        self.switches.heal()

    def sever(self) -> None:
        """Close every open connection at once (both TCP streams), like a reset."""
        for scope in self._live.values():
            scope.cancel()

    def close(self) -> None:
        self._scope.cancel()

    @property
    def connections(self) -> int:
        """Connections open now, including those held by a partition."""
        return len(self._live)

    def pending(self, direction: Direction | str) -> int:
        """Frames queued or held toward `direction` on every open connection."""
        wanted = Direction.of(direction)
        return sum(
            len(link.outbox.queue) + (link.outbox.held is not None)
            for links in self._relay.links.values()
            for link in links
            if link.direction is wanted
        )

    def decisions(self) -> list[tuple[int, str, int, str, str, int]]:
        """The recorded fates without their times: equal across replays of one seed."""
        return [event.decision for event in self.events]

    # Serving ----------------------------------------------------------------------------

    async def serve(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        listeners = await trio.open_tcp_listeners(0, host=self.listen_host)
        self.port = listeners[0].socket.getsockname()[1]
        try:
            with self._scope, trio.move_on_after(self.settings.lifetime_s):
                async with trio.open_nursery() as nursery:
                    task_status.started()
                    await self._accept(nursery, listeners[0])
        finally:
            for listener in listeners:
                await trio.aclose_forcefully(listener)

    async def _accept(self, nursery: trio.Nursery, listener: trio.SocketListener) -> None:
        for _ in range(self.settings.max_accepts):
            stream = await listener.accept()
            if len(self._live) >= self.settings.max_connections:
                await trio.aclose_forcefully(stream)
                continue
            number = next(self._numbers)
            self._live[number] = trio.CancelScope()
            nursery.start_soon(self._connection, number, stream)

    async def _connection(self, number: int, client: trio.SocketStream) -> None:
        try:
            with self._live[number]:
                await self._relay.relay(number, client)
        except* BROKEN:
            pass  # one connection ends; the proxy goes on
        finally:
            del self._live[number]
            self._relay.links.pop(number, None)
            await trio.aclose_forcefully(client)

    def _record(self, number: int, link: Link, message: Message, decision: Decision) -> None:
        if len(self.events) >= self.settings.max_trace:
            self.trace_overflow += 1
            return
        event = ProxyEvent(
            self.clock.monotonic_ms(),
            number,
            link.direction,
            link.sequence,
            message.kind,
            message.size,
            decision.fate,
            decision.delay_ms,
        )
        self.events.append(event)
        if self.sink is not None:
            self.sink.emit(
                "frame",
                connection=number,
                direction=event.direction.value,
                sequence=event.sequence,
                kind=event.kind,
                size=event.size,
                fate=event.fate.value,
                delay_ms=event.delay_ms,
            )


async def start_proxy(
    nursery: trio.Nursery,
    target_port: int,
    *,
    seed: int,
    target_host: str = "127.0.0.1",
    listen_host: str = "127.0.0.1",
    settings: ProxySettings | None = None,
    clock: Clock | None = None,
    sink: TraceWriter | None = None,
) -> LoopbackProxy:
    """A proxy to `target_host:target_port`, serving in `nursery` once this returns."""
    proxy = LoopbackProxy(
        target_port,
        seed,
        target_host,
        listen_host,
        settings or ProxySettings(),
        clock or SystemClock(),
        sink,
    )
    await nursery.start(proxy.serve)
    return proxy
