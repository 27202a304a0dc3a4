"""The frame stream's own pipe reads and writes (`TrioFrameStream` on `FdStream`s), on real
OS pipes: a full pipe makes a write wait (its caller's bound ends it), a closed or
abandoned pipe raises trio's stream errors, and a read waits, reads, and sees the end."""

from __future__ import annotations

import os

import pytest
import trio

from worker_bridge import NODE, Connection, TrioFrameStream


def _pipe_stream() -> tuple[TrioFrameStream, int, int, trio.lowlevel.FdStream]:
    """A stream writing into one pipe and reading from another; the far ends are raw fds."""
    read_out, write_out = os.pipe()  # we write into write_out; the test reads read_out
    read_in, write_in = os.pipe()  # the test writes write_in; we read read_in
    sender, receiver = trio.lowlevel.FdStream(write_out), trio.lowlevel.FdStream(read_in)
    stream = TrioFrameStream(Connection(NODE, epoch=1), sender, receiver)
    return stream, read_out, write_in, sender


async def test_a_write_to_a_full_pipe_waits_until_its_bound_and_then_the_pipe_drains() -> None:
    """Writes fill the pipe without error; the next one waits (cut off by the caller's
    bound, not raising); once the far end reads, a write goes through again."""
    stream, read_out, write_in, _ = _pipe_stream()
    chunk = b"x" * 4096
    with trio.move_on_after(5) as filling:  # a pipe holds 64 KiB here: 16 chunks
        for _ in range(1000):
            with trio.move_on_after(0.2) as one:
                await stream._write(chunk)
            if one.cancelled_caught:
                break
    assert not filling.cancelled_caught
    assert one.cancelled_caught  # the pipe filled and the write waited
    assert os.read(read_out, 1 << 20)  # drain what the pipe holds (never blocks: it is full)
    with trio.fail_after(5):
        await stream._write(b"after\n")
    os.close(read_out)
    os.close(write_in)


async def test_a_write_whose_reader_is_gone_raises_broken_resource() -> None:
    """With the far end closed, a write raises `BrokenResourceError` (EPIPE), not OSError."""
    stream, read_out, write_in, _ = _pipe_stream()
    os.close(read_out)
    with pytest.raises(trio.BrokenResourceError):
        await stream._write(b"lost\n")
    os.close(write_in)


async def test_closing_the_pipe_ends_a_waiting_read_and_later_writes() -> None:
    """A read waiting on an empty pipe raises `ClosedResourceError` when the stream is
    closed from another task; a write after the close raises it too."""
    stream, read_out, write_in, sender = _pipe_stream()
    raised: list[BaseException] = []

    async def reader() -> None:
        try:
            await stream._read()
        except trio.ClosedResourceError as error:
            raised.append(error)

    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(reader)
            await trio.sleep(0.05)
            await stream._receive_stream.aclose()
    assert len(raised) == 1
    await sender.aclose()
    with pytest.raises(trio.ClosedResourceError):
        await stream._write(b"late\n")
    os.close(read_out)
    os.close(write_in)


async def test_a_read_returns_what_was_written_then_the_end() -> None:
    """A read returns the bytes the far end wrote, and b"" once the far end closed."""
    stream, read_out, write_in, _ = _pipe_stream()
    os.write(write_in, b"hello\n")
    with trio.fail_after(5):
        assert await stream._read() == b"hello\n"
        os.close(write_in)
        assert await stream._read() == b""
    os.close(read_out)
