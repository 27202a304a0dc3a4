"""The fault proxy's guards and bookkeeping: loopback only, typed refusals of bad settings,
bounds, a held handshake during a partition, and replay of its decisions from a seed."""

from __future__ import annotations

import pathlib

import pytest
import trio
from trio_websocket import serve_websocket

from maia.core import MaiaError
from simulations import (
    Direction,
    Fate,
    LoopbackProxy,
    NotLoopback,
    ProxyError,
    ProxySettings,
    TraceWriter,
    check_trace,
    read_trace,
    start_proxy,
)

from ._echo import (
    SENTINEL,
    WAIT_S,
    EchoServer,
    connect,
    open_maia,
    receive_until_sentinel,
    start_pair,
    wait_for,
)


@pytest.mark.parametrize(
    ("field", "host"),
    [
        ("target_host", "10.0.0.1"),
        ("target_host", "192.168.1.10"),
        ("target_host", "localhost"),  # a name may resolve anywhere
        ("target_host", "example.com"),
        ("listen_host", "0.0.0.0"),
        ("listen_host", "::"),
    ],
)
def test_non_loopback_addresses_are_refused(field: str, host: str) -> None:
    """A target or listen address off loopback raises NotLoopback naming the field."""
    with pytest.raises(NotLoopback) as caught:
        LoopbackProxy(9, seed=0, **{field: host})  # type: ignore[arg-type]
    assert caught.value.field == field


async def test_a_non_loopback_target_never_opens_a_socket() -> None:
    """`start_proxy` refuses before it listens or connects anywhere."""
    async with trio.open_nursery() as nursery:
        with pytest.raises(NotLoopback):
            await start_proxy(nursery, 80, seed=0, target_host="203.0.113.5")
        assert not nursery.child_tasks  # nothing started


def test_loopback_literals_are_accepted() -> None:
    """127.0.0.0/8 and ::1 are loopback."""
    for host in ("127.0.0.1", "127.5.6.7", "::1"):
        assert LoopbackProxy(9, seed=0, target_host=host).target_host == host


@pytest.mark.parametrize(
    ("field", "knobs"),
    [
        ("loss", {"loss": 1.5}),
        ("duplicate", {"duplicate": -0.1}),
        ("reorder", {"reorder": 2.0}),
        ("delay_ms", {"delay_ms": (10, 5)}),
        ("delay_ms", {"delay_ms": (0, 600_000)}),
    ],
)
def test_bad_knobs_are_refused(field: str, knobs: dict[str, object]) -> None:
    """An out-of-range knob raises ProxyError naming it and changes nothing."""
    proxy = LoopbackProxy(9, seed=0)
    before = dict(proxy.switches.faults)
    with pytest.raises(ProxyError) as caught:
        proxy.set_faults("to_node", **knobs)  # type: ignore[arg-type]
    assert caught.value.field == field
    assert proxy.switches.faults == before


def test_an_unknown_direction_is_refused() -> None:
    """A direction that is neither to_control nor to_node is a typed error."""
    proxy = LoopbackProxy(9, seed=0)
    with pytest.raises(ProxyError) as caught:
        proxy.partition(one_way="sideways")
    assert caught.value.field == "direction"
    assert proxy.switches.partitioned == set()


async def test_a_rejected_upgrade_passes_through() -> None:
    """The target's refusal of the handshake (status and body) reaches the client unchanged."""
    async with trio.open_nursery() as nursery:
        echo, proxy = await start_pair(nursery)
        echo.reject = True
        with pytest.raises(MaiaError) as caught:
            await open_maia(proxy)
        assert caught.value.code == "role_denied"  # the body's typed error, intact
        assert caught.value.details == {"k": 1}
        assert echo.connections == 0
        nursery.cancel_scope.cancel()


async def test_a_handshake_waits_for_the_heal() -> None:
    """A connection opened during a partition reaches the target only after `heal`."""
    async with trio.open_nursery() as nursery:
        echo, proxy = await start_pair(nursery)
        proxy.partition(one_way="to_node")
        connected = trio.Event()

        async def client() -> None:
            async with connect(proxy) as ws:
                connected.set()
                await ws.send_message(SENTINEL)
                await receive_until_sentinel(ws)

        nursery.start_soon(client)
        await wait_for(lambda: proxy.connections == 1, "the proxy holds the connection")
        assert echo.connections == 0
        assert not connected.is_set()
        proxy.heal()
        with trio.fail_after(WAIT_S):
            await connected.wait()
        assert echo.connections == 1
        await wait_for(lambda: echo.received == [SENTINEL], "the sentinel")
        nursery.cancel_scope.cancel()


async def test_an_oversized_message_closes_only_its_connection() -> None:
    """A message over the bound is refused (recorded); the next connection works."""
    settings = ProxySettings(max_message_bytes=1_024)
    async with trio.open_nursery() as nursery:
        echo, proxy = await start_pair(nursery, settings=settings)
        big = await open_maia(proxy)
        await big.send("x" * 2_048)
        with trio.fail_after(WAIT_S):
            assert await big.receive() is None  # closed, no echo
        assert big.close_code == 1006
        await big.aclose()
        assert [e.fate for e in proxy.events] == [Fate.REFUSED]
        assert echo.received == []
        async with connect(proxy) as ws:
            await ws.send_message(SENTINEL)
            assert await receive_until_sentinel(ws) == []
        nursery.cancel_scope.cancel()


async def _faulty_run(seed: int) -> tuple[list[tuple[int, str, int, str, str, int]], list[str]]:
    """Sixteen messages through loss, duplication and delay toward Control, and loss,
    reordering and delay toward the Node; every fate is drawn before the heal."""
    settings = ProxySettings(reorder_hold_s=60.0)  # a hold ends by traffic, never by time
    async with trio.open_nursery() as nursery:
        echo, proxy = await start_pair(nursery, seed=seed, settings=settings)
        async with connect(proxy) as ws:
            proxy.set_faults("to_control", delay_ms=(0, 20), loss=0.2, duplicate=0.2)
            proxy.set_faults("to_node", delay_ms=(0, 20), loss=0.2, reorder=0.3)

            def decided() -> bool:
                texts = [e for e in proxy.events if e.kind == "text"]
                up = [e for e in texts if e.direction is Direction.TO_CONTROL]
                arrivals = sum({Fate.LOST: 0, Fate.DUPLICATED: 2}.get(e.fate, 1) for e in up)
                return (
                    len(up) == 16
                    and len(echo.received) == arrivals
                    and len(texts) - len(up) == arrivals  # each echo decided too
                )

            for i in range(16):
                await ws.send_message(f"m{i}")
            await wait_for(decided, "every message and echo decided")
            proxy.heal()
            await ws.send_message(SENTINEL)
            received = await receive_until_sentinel(ws)
        nursery.cancel_scope.cancel()
    return sorted(d for d in proxy.decisions() if d[3] == "text"), received


async def test_a_seed_replays_its_decisions() -> None:
    """The same seed gives each message the same fate and the client the same messages;
    another seed does not."""
    first, second, other = await _faulty_run(11), await _faulty_run(11), await _faulty_run(12)
    assert first == second
    fates = {d[4] for d in first[0]}
    assert {"lost", "forwarded"} <= fates  # the faults really acted
    assert first[0] != other[0]


async def test_the_proxy_writes_frame_events_into_a_real_run_trace(
    tmp_path: pathlib.Path,
) -> None:
    """With a sink, each decision is a `frame` event of the trace format, read back
    strictly; frames alone break no invariant."""
    writer = TraceWriter(tmp_path / "run.jsonl")
    async with trio.open_nursery() as nursery:
        echo = EchoServer()
        server = await nursery.start(serve_websocket, echo.handler, "127.0.0.1", 0, None)
        proxy = await start_proxy(nursery, server.port, seed=1, sink=writer)
        proxy.set_faults("to_node", loss=1.0)
        async with connect(proxy) as ws:
            await ws.send_message("a")
            await wait_for(lambda: len(proxy.events) == 2, "both decisions")
        nursery.cancel_scope.cancel()
    events = read_trace(tmp_path / "run.jsonl")
    assert events == writer.events
    texts = [(e["direction"], e["fate"]) for e in events if e["kind"] == "text"]
    assert texts == [("to_control", "forwarded"), ("to_node", "lost")]
    verdict = check_trace(events)
    assert verdict.violations == ()
    assert verdict.events == len(events)
