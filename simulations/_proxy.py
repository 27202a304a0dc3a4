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
seeded fate (`_proxy_link`), recorded, and queued for its sender (`_proxy_outbox`). A Close
frame and the end of a TCP stream always pass, after what is queued, so a test can end; a
connection opened while a partition stands waits (at most `hold_timeout_s`) for the heal.
Every wait has a bound, and the whole proxy stops serving after `lifetime_s`.
"""

from __future__ import annotations

import itertools
import random

import attrs
import trio

from maia.core import Clock, SystemClock

from ._proxy_link import (
    Decision,
    Direction,
    Fate,
    LinkFaults,
    ProxyError,
    ProxyEvent,
    Switchboard,
    decide,
    link_rng,
    loopback_host,
)
from ._proxy_outbox import Outbox
from ._proxy_wire import (
    MAX_HEAD_BYTES,
    RECEIVE_BYTES,
    FrameReader,
    FrameWriter,
    Message,
    WireError,
    read_head,
    upgraded,
    without_extensions,
)
from ._trace import TraceWriter

_BROKEN = (WireError, trio.BrokenResourceError, trio.ClosedResourceError, OSError)


@attrs.frozen
class ProxySettings:
    max_message_bytes: int = 4 * 1024 * 1024
    max_pending: int = 1_024  # frames queued per direction
    max_connections: int = 64
    max_accepts: int = 10_000
    max_trace: int = 100_000
    handshake_timeout_s: float = 10.0
    connect_timeout_s: float = 5.0
    send_timeout_s: float = 10.0
    hold_timeout_s: float = 30.0
    reorder_hold_s: float = 1.0
    linger_s: float = 5.0
    idle_wake_s: float = 1.0
    lifetime_s: float = 600.0


@attrs.define
class _Link:
    direction: Direction
    source: trio.SocketStream
    sink: trio.SocketStream
    reader: FrameReader
    writer: FrameWriter
    outbox: Outbox
    rng: random.Random
    sequence: int = 0
    eof: bool = False  # the source's TCP stream ended (not a Close)
    done: trio.Event = attrs.Factory(trio.Event)


@attrs.define(eq=False)
class LoopbackProxy:
    target_port: int
    seed: int
    target_host: str = "127.0.0.1"
    listen_host: str = "127.0.0.1"
    settings: ProxySettings = ProxySettings()
    clock: Clock = attrs.Factory(SystemClock)
    sink: TraceWriter | None = None
    port: int = 0
    switches: Switchboard = attrs.Factory(Switchboard)
    events: list[ProxyEvent] = attrs.Factory(list)
    trace_overflow: int = 0
    _numbers: itertools.count[int] = attrs.Factory(lambda: itertools.count(1))
    _live: dict[int, trio.CancelScope] = attrs.Factory(dict)
    _links: dict[int, list[_Link]] = attrs.Factory(dict)
    _scope: trio.CancelScope = attrs.Factory(trio.CancelScope)
    _healed: trio.Event = attrs.Factory(trio.Event)

    def __attrs_post_init__(self) -> None:
        loopback_host("target_host", self.target_host)
        loopback_host("listen_host", self.listen_host)
        if not 0 < self.target_port < 65_536:
            raise ProxyError("target_port", f"{self.target_port} is not a TCP port")

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

    def heal(self) -> None:
        """End every partition and clear every fault: the link is clean again."""
        self.switches.heal()
        self._healed.set()
        self._healed = trio.Event()

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
            for links in self._links.values()
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
                await self._relay(number, client)
        except* _BROKEN:
            pass  # one connection ends; the proxy goes on
        finally:
            del self._live[number]
            self._links.pop(number, None)
            await trio.aclose_forcefully(client)

    async def _relay(self, number: int, client: trio.SocketStream) -> None:
        settings = self.settings
        with trio.move_on_after(settings.hold_timeout_s):
            while self.switches.isolated:  # a partition: the handshake cannot pass either
                await self._healed.wait()
        if self.switches.isolated:
            return
        head, early = await read_head(client, settings.handshake_timeout_s)
        with trio.fail_after(settings.connect_timeout_s):
            target = await trio.open_tcp_stream(self.target_host, self.target_port)
        try:
            with trio.fail_after(settings.send_timeout_s):
                await target.send_all(without_extensions(head))
            answer, late = await read_head(target, settings.handshake_timeout_s)
            with trio.fail_after(settings.send_timeout_s):
                await client.send_all(answer + late)
            if upgraded(answer):
                await self._frames(number, client, target, early, late)
            else:  # a refusal: its body follows, then the target closes
                await _pass_rest(target, client, settings.handshake_timeout_s)
        finally:
            await trio.aclose_forcefully(target)

    async def _frames(
        self,
        number: int,
        client: trio.SocketStream,
        target: trio.SocketStream,
        early: bytes,
        late: bytes,
    ) -> None:
        # `late` (frames the target sent with its 101) went out with the answer as bytes.
        del late
        links = [
            self._link(number, Direction.TO_CONTROL, client, target),
            self._link(number, Direction.TO_NODE, target, client),
        ]
        self._links[number] = links
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._read, number, links[0], early)
            nursery.start_soon(self._read, number, links[1], b"")
            for link in links:
                nursery.start_soon(self._send, link)
            nursery.start_soon(self._linger, links, nursery.cancel_scope)

    def _link(
        self, number: int, direction: Direction, source: trio.SocketStream, sink: trio.SocketStream
    ) -> _Link:
        toward_server = direction is Direction.TO_CONTROL
        return _Link(
            direction,
            source,
            sink,
            FrameReader(
                from_client=toward_server, max_message_bytes=self.settings.max_message_bytes
            ),
            FrameWriter(to_server=toward_server),
            Outbox(self.settings.max_pending),
            link_rng(self.seed, number, direction),
        )

    async def _read(self, number: int, link: _Link, data: bytes) -> None:
        while True:
            if data:
                try:
                    messages = link.reader.feed(data)
                except WireError:
                    self._record(number, link, Message("binary", b""), Decision(Fate.REFUSED))
                    raise
                for message in messages:
                    await self._admit(number, link, message)
                    if message.kind == "close":
                        link.outbox.finish()
                        return
            data = await link.source.receive_some(RECEIVE_BYTES)
            if not data:
                link.eof = True
                link.outbox.finish()
                return

    async def _admit(self, number: int, link: _Link, message: Message) -> None:
        link.sequence += 1
        direction = link.direction
        if message.kind == "close":
            decision = Decision(Fate.FORWARDED)  # always passes (see the module docstring)
        else:
            partitioned = direction in self.switches.partitioned
            decision = decide(link.rng, self.switches.faults[direction], partitioned)
        if decision.copies and not await link.outbox.wait_for_space(self.settings.send_timeout_s):
            raise WireError(f"{direction.value}: {self.settings.max_pending} frames queued")
        now = trio.current_time()
        due, data = now + decision.delay_ms / 1000, link.writer.encode(message)
        if decision.fate is Fate.REORDERED and not link.outbox.hold(
            due, data, now + self.settings.reorder_hold_s
        ):
            decision = Decision(Fate.FORWARDED, decision.delay_ms)  # one held at a time
        if decision.fate is not Fate.REORDERED and decision.copies:
            link.outbox.push(due, data, decision.copies)
        self._record(number, link, message, decision)

    async def _send(self, link: _Link) -> None:
        outbox, settings = link.outbox, self.settings
        while True:
            now = trio.current_time()
            data = outbox.pop_due(now)
            if data is not None:
                with trio.fail_after(settings.send_timeout_s):
                    await link.sink.send_all(data)
                continue
            if outbox.finished and outbox.empty:
                if link.eof:  # pass the half-close on; after a Close the peers end TCP
                    try:
                        with trio.move_on_after(settings.send_timeout_s):
                            await link.sink.send_eof()
                    except _BROKEN:
                        pass
                link.done.set()
                return
            await outbox.wait_until(outbox.next_wake(now, settings.idle_wake_s))

    async def _linger(self, links: list[_Link], scope: trio.CancelScope) -> None:
        """Once one direction has ended, the other gets `linger_s` to end too."""
        async with trio.open_nursery() as nursery:
            for link in links:
                nursery.start_soon(_wait_then_cancel, link.done, nursery.cancel_scope)
        with trio.move_on_after(self.settings.linger_s):
            for link in links:
                await link.done.wait()
        scope.cancel()

    def _record(self, number: int, link: _Link, message: Message, decision: Decision) -> None:
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


async def _pass_rest(source: trio.SocketStream, sink: trio.SocketStream, timeout_s: float) -> None:
    """Bytes from `source` to `sink` until it ends, at most `MAX_HEAD_BYTES` or `timeout_s`."""
    left = MAX_HEAD_BYTES
    with trio.move_on_after(timeout_s):
        while left > 0:
            data = await source.receive_some(min(left, RECEIVE_BYTES))
            if not data:
                return
            left -= len(data)
            await sink.send_all(data)


async def _wait_then_cancel(event: trio.Event, scope: trio.CancelScope) -> None:
    await event.wait()
    scope.cancel()


async def start_proxy(
    nursery: trio.Nursery,
    target_port: int,
    *,
    seed: int,
    target_host: str = "127.0.0.1",
    listen_host: str = "127.0.0.1",
    settings: ProxySettings = ProxySettings(),
    clock: Clock | None = None,
    sink: TraceWriter | None = None,
) -> LoopbackProxy:
    """A proxy to `target_host:target_port`, serving in `nursery` once this returns."""
    proxy = LoopbackProxy(
        target_port,
        seed,
        target_host,
        listen_host,
        settings,
        clock or SystemClock(),
        sink,
    )
    await nursery.start(proxy.serve)
    return proxy
