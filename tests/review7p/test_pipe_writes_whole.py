"""s7-pipe's bounded pipe writes (749bab9, `TrioFrameStream` with `write_bound_s`) on a
real OS pipe read slowly: eight senders whose callers are cancelled at random points,
frames of up to 100 KiB (more than the pipe holds, so writes wait for the lock and for
room): every frame that took its sequence reaches the far end whole, in sequence order,
none inside another; and a far end that stops reading fails the write at the bound."""

from __future__ import annotations

import os
import random

import orjson
import trio

from tests.worker_bridge._pipe_stream import pipe_stream
from worker_bridge import FrameWriteTimeout, TrioFrameStream


class _NumberedLines:
    """Stands in for the protocol's `Connection.send` (the frames' encoding is not under
    test): each frame takes the next number at encoding, as a sequence would."""

    def __init__(self, rng: random.Random) -> None:
        self.taken = 0
        self._rng = rng

    def send(self, frame: object) -> bytes:
        self.taken += 1
        pad = "x" * self._rng.choice([10, 500, 5000, 30_000, 100_000])
        return orjson.dumps({"n": self.taken, "pad": pad}) + b"\n"


def _stream(rng: random.Random, bound_s: float) -> tuple[TrioFrameStream, _NumberedLines, int]:
    stream, read_out, _write_in = pipe_stream(bound_s)
    lines = _NumberedLines(rng)
    stream.connection = lines  # type: ignore[assignment]
    os.set_blocking(read_out, False)
    return stream, lines, read_out


async def test_cancelled_concurrent_senders_never_cut_or_interleave_a_frame() -> None:
    """8 senders x 30 frames, a seeded half of the sends cancelled after 0-2 ms, the far
    end reading 16 KiB at a time with pauses: the lines read are 1..N, each whole."""
    rng = random.Random(11)
    stream, lines, read_out = _stream(rng, bound_s=20.0)
    received = bytearray()
    senders_done = trio.Event()

    async def sender(lane: int) -> None:
        lane_rng = random.Random(lane)
        for _ in range(30):
            delay = lane_rng.random() * 0.002 if lane_rng.random() < 0.5 else 60.0
            with trio.move_on_after(delay):
                await stream.send(object())  # type: ignore[arg-type]
            await trio.lowlevel.checkpoint()

    async def reader() -> None:
        while True:
            try:
                chunk = os.read(read_out, 16384)
            except BlockingIOError:
                if senders_done.is_set():
                    return
                with trio.move_on_after(0.05):
                    await trio.lowlevel.wait_readable(read_out)
                continue
            received.extend(chunk)
            await trio.sleep(0.001)

    with trio.fail_after(120):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(reader)
            async with trio.open_nursery() as senders:
                for lane in range(8):
                    senders.start_soon(sender, lane)
            senders_done.set()
    text = bytes(received)
    assert text.endswith(b"\n")
    numbers = [orjson.loads(line)["n"] for line in text.split(b"\n")[:-1]]
    assert numbers == list(range(1, lines.taken + 1))
    assert lines.taken > 100
    os.close(read_out)


async def test_a_far_end_that_stops_reading_fails_the_writer_and_the_waiter() -> None:
    """Nobody reads: the sender writing now and the one waiting for the lock both raise
    `FrameWriteTimeout` at the 0.3 s bound, even with their callers cancelled."""
    stream, _lines, read_out = _stream(random.Random(3), bound_s=0.3)
    outcomes: list[str] = []

    async def sender() -> None:
        with trio.CancelScope() as scope:
            scope.cancel()  # the caller is cancelled: the bound still ends the wait
            try:
                while True:
                    await stream.send(object())  # type: ignore[arg-type]
            except FrameWriteTimeout:
                outcomes.append("timeout")

    with trio.fail_after(20):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(sender)
            nursery.start_soon(sender)
    assert outcomes == ["timeout", "timeout"]
    os.close(read_out)
