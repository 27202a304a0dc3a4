"""The fault proxy on real sockets: a trio-websocket echo pair on 127.0.0.1 talks through
it, and each fault does to whole messages what it says."""

from __future__ import annotations

import trio

from simulations import Direction, Fate, LoopbackProxy, ProxySettings

from ._echo import SENTINEL, connect, open_maia, receive_until_sentinel, start_pair, wait_for

MESSAGES = [f"m{i}" for i in range(12)]


def fates(proxy: LoopbackProxy, direction: Direction) -> list[tuple[int, Fate]]:
    return [
        (e.sequence, e.fate) for e in proxy.events if e.direction is direction and e.kind == "text"
    ]


async def test_clean_proxy_forwards_everything_in_order() -> None:
    """With no fault every message and its echo pass once, in order, and are recorded."""
    async with trio.open_nursery() as nursery:
        echo, proxy = await start_pair(nursery)
        async with connect(proxy) as ws:
            for message in [*MESSAGES, SENTINEL]:
                await ws.send_message(message)
            assert await receive_until_sentinel(ws) == MESSAGES
            await ws.ping(b"p1")  # answered: the pong came back through the proxy
        assert echo.received == [*MESSAGES, SENTINEL]
        kinds = {(e.direction, e.kind) for e in proxy.events}
        assert (Direction.TO_CONTROL, "ping") in kinds
        assert (Direction.TO_NODE, "pong") in kinds
        assert all(e.fate is Fate.FORWARDED for e in proxy.events)
        nursery.cancel_scope.cancel()


async def test_loss_drops_whole_messages_as_recorded() -> None:
    """Loss toward Control drops exactly the messages the trace marks lost."""
    async with trio.open_nursery() as nursery:
        echo, proxy = await start_pair(nursery, seed=3)
        async with connect(proxy) as ws:
            proxy.set_faults("to_control", loss=0.5)
            for message in MESSAGES:
                await ws.send_message(message)
            await wait_for(lambda: len(fates(proxy, Direction.TO_CONTROL)) == 12, "12 fates")
            proxy.heal()
            await ws.send_message(SENTINEL)
            received = await receive_until_sentinel(ws)
        lost = {s for s, fate in fates(proxy, Direction.TO_CONTROL) if fate is Fate.LOST}
        assert 0 < len(lost) < 12  # seed 3 loses some, not all
        assert received == [m for i, m in enumerate(MESSAGES, 1) if i not in lost]
        assert echo.received == [*received, SENTINEL]
        nursery.cancel_scope.cancel()


async def test_duplication_delivers_each_message_twice() -> None:
    """Duplication toward Control makes the server see, and echo, every message twice."""
    async with trio.open_nursery() as nursery:
        echo, proxy = await start_pair(nursery)
        async with connect(proxy) as ws:
            proxy.set_faults("to_control", duplicate=1.0)
            for message in MESSAGES[:4]:
                await ws.send_message(message)
            await wait_for(lambda: len(echo.received) == 8, "eight arrivals")
            proxy.heal()
            await ws.send_message(SENTINEL)
            received = await receive_until_sentinel(ws)
        assert received == [m for m in MESSAGES[:4] for _ in (1, 2)]
        assert {f for _, f in fates(proxy, Direction.TO_CONTROL)[:4]} == {Fate.DUPLICATED}
        nursery.cancel_scope.cancel()


async def test_reordering_swaps_a_held_message_with_the_next() -> None:
    """Reordering toward the Node holds a message back until the next one has passed."""
    settings = ProxySettings(reorder_hold_s=60.0)  # released by the next message, not time
    async with trio.open_nursery() as nursery:
        echo, proxy = await start_pair(nursery, settings=settings)
        async with connect(proxy) as ws:
            proxy.set_faults("to_node", reorder=1.0)
            for message in MESSAGES[:6]:
                await ws.send_message(message)
            await wait_for(lambda: len(fates(proxy, Direction.TO_NODE)) == 6, "six echoes")
            proxy.heal()
            await ws.send_message(SENTINEL)
            received = await receive_until_sentinel(ws)
        assert received == ["m1", "m0", "m3", "m2", "m5", "m4"]
        assert echo.received[:6] == MESSAGES[:6]  # the other direction kept its order
        held = [s for s, f in fates(proxy, Direction.TO_NODE) if f is Fate.REORDERED]
        assert held == [1, 3, 5]
        nursery.cancel_scope.cancel()


async def test_delay_queues_frames_and_records_the_delay() -> None:
    """A delayed frame waits at the proxy (the server has nothing meanwhile); delayed frames
    arrive in order; the trace carries each delay drawn."""
    async with trio.open_nursery() as nursery:
        echo, proxy = await start_pair(nursery)
        slow = await open_maia(proxy)
        proxy.set_faults("to_control", delay_ms=(30_000, 30_000))
        await slow.send("slow")
        await wait_for(lambda: proxy.pending("to_control") == 1, "one queued frame")
        assert echo.received == []  # 30 s before it is due: still held at the proxy
        proxy.sever()  # end the connection rather than wait
        assert await slow.receive() is None
        await slow.aclose()
        proxy.set_faults("to_control", delay_ms=(200, 400))
        async with connect(proxy) as ws:
            for message in [*MESSAGES[:3], SENTINEL]:
                await ws.send_message(message)
            assert await receive_until_sentinel(ws) == MESSAGES[:3]
        assert echo.received == [*MESSAGES[:3], SENTINEL]
        delays = [e.delay_ms for e in proxy.events if e.direction is Direction.TO_CONTROL]
        assert delays[0] == 30_000
        assert all(200 <= d <= 400 for d in delays[1:5])
        nursery.cancel_scope.cancel()


async def test_short_delay_still_delivers_in_order() -> None:
    """Jittered delays both ways reorder nothing: TCP order is kept."""
    async with trio.open_nursery() as nursery:
        _, proxy = await start_pair(nursery)
        proxy.set_faults(delay_ms=(0, 80))
        async with connect(proxy) as ws:
            for message in [*MESSAGES, SENTINEL]:
                await ws.send_message(message)
            assert await receive_until_sentinel(ws) == MESSAGES
        assert len({e.delay_ms for e in proxy.events}) > 1  # the delays really varied
        nursery.cancel_scope.cancel()


async def test_full_partition_drops_both_ways_until_heal() -> None:
    """A partition drops frames both ways; after `heal` traffic flows again."""
    async with trio.open_nursery() as nursery:
        echo, proxy = await start_pair(nursery)
        async with connect(proxy) as ws:
            await ws.send_message("before")
            assert await ws.get_message() == "before"
            proxy.partition()
            await ws.send_message("lost")
            await wait_for(lambda: len(fates(proxy, Direction.TO_CONTROL)) == 2, "two fates")
            proxy.heal()
            await ws.send_message(SENTINEL)
            assert await receive_until_sentinel(ws) == []
        assert echo.received == ["before", SENTINEL]
        assert fates(proxy, Direction.TO_CONTROL)[1] == (2, Fate.PARTITIONED)
        nursery.cancel_scope.cancel()


async def test_one_way_partition_toward_the_node() -> None:
    """Partitioned toward the Node: Control still hears the Node, the Node hears nothing."""
    async with trio.open_nursery() as nursery:
        echo, proxy = await start_pair(nursery)
        async with connect(proxy) as ws:
            proxy.partition(one_way="to_node")
            await ws.send_message("heard")
            await wait_for(lambda: echo.received == ["heard"], "the server hears")
            await wait_for(lambda: len(fates(proxy, Direction.TO_NODE)) == 1, "echo decided")
            proxy.heal()
            await ws.send_message(SENTINEL)
            assert await receive_until_sentinel(ws) == []
        assert fates(proxy, Direction.TO_NODE)[0] == (1, Fate.PARTITIONED)
        nursery.cancel_scope.cancel()


async def test_one_way_partition_toward_control() -> None:
    """Partitioned toward Control: the Node's frames vanish, nothing comes back."""
    async with trio.open_nursery() as nursery:
        echo, proxy = await start_pair(nursery)
        async with connect(proxy) as ws:
            proxy.partition(one_way=Direction.TO_CONTROL)
            await ws.send_message("unheard")
            await wait_for(lambda: len(fates(proxy, Direction.TO_CONTROL)) == 1, "decided")
            proxy.heal()
            await ws.send_message(SENTINEL)
            assert await receive_until_sentinel(ws) == []
        assert echo.received == [SENTINEL]
        nursery.cancel_scope.cancel()


async def test_the_node_api_server_and_maia_client_accept_the_proxied_frames() -> None:
    """Behind the proxy, the Node API's strict server (masking, UTF-8, bounds) and Maia's
    client transport exchange duplicated and reordered messages without a protocol error."""
    settings = ProxySettings(reorder_hold_s=60.0)
    async with trio.open_nursery() as nursery:
        echo, proxy = await start_pair(nursery, settings=settings, guarded=True)
        ws = await open_maia(proxy)
        proxy.set_faults("to_control", duplicate=1.0)
        proxy.set_faults("to_node", reorder=1.0)
        await ws.send("é1")
        await wait_for(lambda: len(fates(proxy, Direction.TO_CONTROL)) == 1, "é1 decided")
        proxy.set_faults("to_control")  # clean again toward Control
        for text in ["ü2", "ö3"]:
            await ws.send(text)
        await wait_for(lambda: len(fates(proxy, Direction.TO_NODE)) == 4, "four echoes")
        proxy.heal()
        await ws.send(SENTINEL)
        received: list[str | bytes] = []
        with trio.fail_after(20):
            for _ in range(10):
                echoed = await ws.receive()
                if echoed == SENTINEL or echoed is None:
                    break
                received.append(echoed)
        await ws.aclose()
        assert received == ["é1", "é1", "ö3", "ü2"]
        assert echo.received == ["é1", "é1", "ü2", "ö3", SENTINEL]
        nursery.cancel_scope.cancel()


async def test_drop_containing_loses_only_the_matching_messages_until_heal() -> None:
    """Toward Control, messages containing the text are lost (and recorded so); the others
    pass in order; after heal nothing is dropped."""
    async with trio.open_nursery() as nursery:
        echo, proxy = await start_pair(nursery)
        async with connect(proxy) as ws:
            proxy.drop_containing("to_control", "drop-me")
            for message in ("a", "x drop-me x", "b", "drop-me"):
                await ws.send_message(message)
            await wait_for(lambda: len(fates(proxy, Direction.TO_CONTROL)) == 4, "4 fates")
            proxy.heal()
            await ws.send_message("drop-me again")
            await ws.send_message(SENTINEL)
            assert await receive_until_sentinel(ws) == ["a", "b", "drop-me again"]
        assert [f for _, f in fates(proxy, Direction.TO_CONTROL)][:4] == [
            Fate.FORWARDED, Fate.LOST, Fate.FORWARDED, Fate.LOST,
        ]  # fmt: skip
        assert echo.received == ["a", "b", "drop-me again", SENTINEL]
        nursery.cancel_scope.cancel()
