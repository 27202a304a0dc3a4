"""One contract suite, run against an in-memory fake worker and the real echo subprocess."""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import pytest
import trio
import trio.testing

import worker_bridge as wb

EPOCH = 7
Opener = Callable[[], "AsyncIterator[wb.TrioFrameStream]"]


async def fake_echo_worker(stream: trio.abc.Stream) -> None:
    """The echo worker's contract in-process: handshake, echo, /flood, /sleep, shutdown."""
    conn = wb.TrioFrameStream(
        wb.Connection(wb.WORKER, epoch=EPOCH, worker_version="f"), stream, stream
    )
    acked = trio.Event()
    interrupted = trio.Event()
    prompts: trio.MemorySendChannel[wb.Prompt]
    prompts, inbox = trio.open_memory_channel[wb.Prompt](4)
    await conn.send(wb.Hello(name="fake", pid=0))

    async def emit(frame: wb.Event) -> None:
        nonlocal acked
        while not conn.connection.window_open:
            await acked.wait()
            acked = trio.Event()
        await conn.send(frame)

    async def turns() -> None:
        async for prompt in inbox:
            tid = prompt.turn_id
            await emit(wb.Event(turn_id=tid, kind="turn.started"))
            word, _, rest = prompt.text.partition(" ")
            if word == "/flood":
                for index in range(int(rest)):
                    await emit(wb.Event(turn_id=tid, kind="message.delta", text=str(index)))
                await emit(wb.Event(turn_id=tid, kind="turn.completed", text="flooded"))
                continue
            if word == "/sleep":
                ms, _, rest = rest.partition(" ")
                with trio.move_on_after(int(ms) / 1000):
                    await interrupted.wait()
                if interrupted.is_set():
                    await conn.send(wb.Interrupted(turn_id=tid))
                    continue
            text = rest if word == "/sleep" else prompt.text
            for start in range(0, len(text), 64):
                await emit(
                    wb.Event(turn_id=tid, kind="message.delta", text=text[start : start + 64])
                )
            await emit(wb.Event(turn_id=tid, kind="turn.completed", text=text))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(turns)
        while (frame := await conn.receive()) is not None:
            match frame:
                case wb.Initialize():
                    await conn.send(wb.Initialized(capabilities=["echo"]))
                case wb.Prompt():
                    interrupted = trio.Event()
                    await prompts.send(frame)
                case wb.Interrupt():
                    interrupted.set()
                case wb.Ack():
                    acked.set()
                case wb.Shutdown():
                    await conn.send(wb.Terminal(reason="shutdown"))
                    await conn.aclose()
                    break
        nursery.cancel_scope.cancel()


@asynccontextmanager
async def open_fake() -> AsyncIterator[wb.TrioFrameStream]:
    node_side, worker_side = trio.testing.memory_stream_pair()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(fake_echo_worker, worker_side)
        yield wb.TrioFrameStream(wb.Connection(wb.NODE, epoch=EPOCH), node_side, node_side)
        nursery.cancel_scope.cancel()


@asynccontextmanager
async def open_real() -> AsyncIterator[wb.TrioFrameStream]:
    env = {**os.environ, "MAIA_WORKER_EPOCH": str(EPOCH), "PYTHONUNBUFFERED": "1"}
    process = await trio.lowlevel.open_process(
        [sys.executable, "-m", "worker_bridge.workers.echo"], stdin=-1, stdout=-1, env=env
    )
    assert process.stdin is not None
    assert process.stdout is not None
    try:
        yield wb.TrioFrameStream(wb.Connection(wb.NODE, epoch=EPOCH), process.stdin, process.stdout)
    finally:
        process.kill()
        await process.wait()


@pytest.fixture(params=["fake", "real"])
def open_worker(request: pytest.FixtureRequest) -> object:
    return open_fake if request.param == "fake" else open_real


async def next_frame(stream: wb.TrioFrameStream) -> wb.Frame | None:
    """The next frame that is not a heartbeat or diagnostics."""
    while True:
        frame = await stream.receive()
        if not isinstance(frame, wb.Heartbeat | wb.ObservationBatch):
            return frame


async def ready(stream: wb.TrioFrameStream) -> None:
    hello = await next_frame(stream)
    assert isinstance(hello, wb.Hello)
    await stream.send(wb.Initialize(attempt_id="a", heartbeat_ms=5000))
    assert isinstance(await next_frame(stream), wb.Initialized)


async def run_turn(stream: wb.TrioFrameStream, text: str) -> list[wb.Event]:
    await stream.send(wb.Prompt(turn_id="t", text=text))
    events: list[wb.Event] = []
    while True:
        frame = await next_frame(stream)
        assert isinstance(frame, wb.Event)
        events.append(frame)
        await stream.send_ack()
        if frame.kind in ("turn.completed", "turn.failed"):
            return events


async def test_handshake_and_echo(open_worker: Callable[[], object]) -> None:
    """hello → initialize → initialized, then a prompt streams back as deltas and completed."""
    with trio.fail_after(10):
        async with open_worker() as stream:  # type: ignore[attr-defined]
            await ready(stream)
            events = await run_turn(stream, "contract " * 30)
            assert events[0].kind == "turn.started"
            assert events[-1].kind == "turn.completed"
            assert events[-1].text == "contract " * 30
            joined = "".join(e.text or "" for e in events if e.kind == "message.delta")
            assert joined == "contract " * 30


async def test_flood_beyond_the_window_completes_with_acks(
    open_worker: Callable[[], object],
) -> None:
    """1,000 deltas (four windows) arrive in order because the driver acks what it consumed."""
    with trio.fail_after(20):
        async with open_worker() as stream:  # type: ignore[attr-defined]
            await ready(stream)
            events = await run_turn(stream, "/flood 1000")
            deltas = [e.text for e in events if e.kind == "message.delta"]
            assert deltas == [str(i) for i in range(1000)]
            assert stream.connection.state is wb.State.READY


async def test_interrupt_ends_a_sleeping_turn(open_worker: Callable[[], object]) -> None:
    """An interrupt during /sleep is answered by `interrupted`, and the next turn works."""
    with trio.fail_after(10):
        async with open_worker() as stream:  # type: ignore[attr-defined]
            await ready(stream)
            await stream.send(wb.Prompt(turn_id="t", text="/sleep 30000 zzz"))
            started = await next_frame(stream)
            assert isinstance(started, wb.Event)
            assert started.kind == "turn.started"
            await stream.send(wb.Interrupt(turn_id="t"))
            assert isinstance(await next_frame(stream), wb.Interrupted)
            await stream.send_ack()
            assert (await run_turn(stream, "again"))[-1].text == "again"


async def test_shutdown_is_answered_by_terminal_then_end_of_stream(
    open_worker: Callable[[], object],
) -> None:
    """shutdown → terminal → the worker closes its end."""
    with trio.fail_after(10):
        async with open_worker() as stream:  # type: ignore[attr-defined]
            await ready(stream)
            await stream.send(wb.Shutdown(reason="test"))
            assert isinstance(await next_frame(stream), wb.Terminal)
            assert await next_frame(stream) is None
            assert stream.connection.state is wb.State.CLOSED
