"""Writes of a `TrioFrameStream` with `write_bound_s` (as the worker handle sets it) on real
OS pipes: a frame is written whole even when its caller is cancelled part-way (the wait for
room is shielded), a write that needs no wait happens with no schedule point (so a pending
cancel cannot cut it), and a wait for room or for the lock ends at the bound with
`FrameWriteTimeout`."""

from __future__ import annotations

import os

import pytest
import trio
import trio.testing

from tests.worker_bridge._pipe_stream import pipe_stream
from worker_bridge import FrameWriteTimeout

BIG = b"y" * (200 * 1024) + b"\n"  # more than a pipe holds (64 KiB here)


async def _drain(fd: int, size: int) -> bytes:
    """Read `size` bytes from the pipe's far end, waiting for them (bounded)."""
    os.set_blocking(fd, False)
    data = b""
    with trio.fail_after(10):
        while len(data) < size:
            await trio.lowlevel.wait_readable(fd)
            data += os.read(fd, 1 << 20)
    return data


async def test_a_cancelled_caller_still_writes_its_frame_whole() -> None:
    """A 200 KiB frame waits for room; its caller's scope is cancelled meanwhile: the write
    goes on, and the far end reads the whole frame once it reads."""
    stream, read_out, write_in = pipe_stream(10.0)
    assert stream.writes_whole
    scope = trio.CancelScope()
    finished = trio.Event()

    async def write() -> None:
        with scope:
            await stream._write(BIG)
            finished.set()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(write)
        await trio.testing.wait_all_tasks_blocked()  # the pipe is full, the write waits
        scope.cancel()
        assert await _drain(read_out, len(BIG)) == BIG
    assert finished.is_set()
    os.close(read_out)
    os.close(write_in)


async def test_a_write_that_needs_no_wait_is_not_cut_by_a_pending_cancel() -> None:
    """Under an already cancelled scope, a frame the pipe takes at once is written (no
    schedule point where the cancel could land)."""
    stream, read_out, write_in = pipe_stream(10.0)
    with trio.CancelScope() as scope:
        scope.cancel()
        await stream._write(b'{"type":"x"}\n')
    assert os.read(read_out, 100) == b'{"type":"x"}\n'
    os.close(read_out)
    os.close(write_in)


async def test_a_frame_nobody_reads_ends_at_the_bound() -> None:
    """Nobody reads the pipe: the write raises `FrameWriteTimeout` at its bound (a
    `BrokenResourceError`), having written what the pipe took."""
    stream, read_out, write_in = pipe_stream(0.2)
    with trio.fail_after(10), pytest.raises(FrameWriteTimeout):
        await stream._write(BIG)
    assert 0 < len(os.read(read_out, 1 << 20)) < len(BIG)
    assert issubclass(FrameWriteTimeout, trio.BrokenResourceError)
    os.close(read_out)
    os.close(write_in)


async def test_a_sender_waiting_for_the_lock_ends_at_the_bound() -> None:
    """A sender behind one that holds the lock and never lets go waits for the lock,
    shielded, and gives up at its bound with `FrameWriteTimeout`, taking no sequence."""
    stream, read_out, write_in = pipe_stream(0.3)
    raised: list[type[BaseException]] = []

    async def second() -> None:
        try:
            await stream.send_ack()
        except FrameWriteTimeout as error:
            raised.append(type(error))

    async def holder(release: trio.Event) -> None:
        await stream._lock()  # holds the lock, as a sender whose write waits does
        await release.wait()
        stream._send_lock.release()

    release = trio.Event()
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(holder, release)
            await trio.testing.wait_all_tasks_blocked()
            await second()
            release.set()
    assert raised == [FrameWriteTimeout]
    assert stream.connection.wire.sent_sequence == 0  # no sequence taken
    os.close(read_out)
    os.close(write_in)
