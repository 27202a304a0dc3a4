"""A Node-side `TrioFrameStream` on two real OS pipes, for the bounded-write tests."""

from __future__ import annotations

import os

import trio

from worker_bridge import NODE, Connection, TrioFrameStream


def pipe_stream(bound_s: float) -> tuple[TrioFrameStream, int, int]:
    """The stream, its writes bounded by `bound_s` (as the worker handle sets it); the read
    end of the pipe it writes and the write end of the pipe it reads (both left open)."""
    read_out, write_out = os.pipe()
    read_in, write_in = os.pipe()
    stream = TrioFrameStream(
        Connection(NODE, epoch=1), trio.lowlevel.FdStream(write_out),
        trio.lowlevel.FdStream(read_in),
    )  # fmt: skip
    stream.write_bound_s = bound_s
    return stream, read_out, write_in
