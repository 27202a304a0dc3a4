"""One proxied connection: the upgrade passed through, then per direction a reader that
parses and decides each message, and a sender that writes it when due (see `_proxy`)."""

from __future__ import annotations

import random
from collections.abc import Callable

import attrs
import trio

from ._proxy_link import Decision, Direction, Fate, Switchboard, decide, link_rng
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

BROKEN = (WireError, trio.BrokenResourceError, trio.ClosedResourceError, OSError)


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
class Link:
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


Record = Callable[[int, "Link", Message, Decision], None]


@attrs.define(eq=False)
class Relay:
    """What every connection shares: the target, the seed, the knobs and the record."""

    target_host: str
    target_port: int
    seed: int
    settings: ProxySettings
    switches: Switchboard
    record: Record
    links: dict[int, list[Link]] = attrs.Factory(dict)

    async def relay(self, number: int, client: trio.SocketStream) -> None:
        settings = self.settings
        with trio.move_on_after(settings.hold_timeout_s):
            while self.switches.isolated:  # a partition: the handshake cannot pass either
                await self.switches.healed.wait()
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
        self.links[number] = links
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._read, number, links[0], early)
            nursery.start_soon(self._read, number, links[1], b"")
            for link in links:
                nursery.start_soon(self._send, link)
            nursery.start_soon(self._linger, links, nursery.cancel_scope)

    def _link(
        self, number: int, direction: Direction, source: trio.SocketStream, sink: trio.SocketStream
    ) -> Link:
        toward_server = direction is Direction.TO_CONTROL
        return Link(
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

    async def _read(self, number: int, link: Link, data: bytes) -> None:
        while True:
            if data:
                try:
                    messages = link.reader.feed(data)
                except WireError:
                    self.record(number, link, Message("binary", b""), Decision(Fate.REFUSED))
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

    async def _admit(self, number: int, link: Link, message: Message) -> None:
        link.sequence += 1
        direction = link.direction
        if message.kind == "close":
            decision = Decision(Fate.FORWARDED)  # always passes (see the module docstring)
        else:
            partitioned = direction in self.switches.partitioned
            decision = decide(link.rng, self.switches.faults[direction], partitioned)
            if message.kind == "text" and self.switches.drops(direction, message.payload):
                decision = Decision(Fate.LOST)  # drawn first all the same: replays stay equal
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
        self.record(number, link, message, decision)

    async def _send(self, link: Link) -> None:
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
                    except BROKEN:
                        pass
                link.done.set()
                return
            await outbox.wait_until(outbox.next_wake(now, settings.idle_wake_s))

    async def _linger(self, links: list[Link], scope: trio.CancelScope) -> None:
        """Once one direction has ended, the other gets `linger_s` to end too."""
        async with trio.open_nursery() as nursery:
            for link in links:
                nursery.start_soon(_wait_then_cancel, link.done, nursery.cancel_scope)
        with trio.move_on_after(self.settings.linger_s):
            for link in links:
                await link.done.wait()
        scope.cancel()


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
