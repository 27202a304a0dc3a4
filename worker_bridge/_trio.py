"""The thin trio adapter: a `Connection` over a pair of byte streams (a worker's pipes).

A short loop around the sans-IO core, nothing more: reads feed `receive_data`, frames come
out of `next_event`, `send` writes under a lock so concurrent senders never interleave lines.
Only this module (and the supervisor above it) touches trio; workers do not import it.

On a worker's pipe (a `FdStream`) a read waits for the pipe to be readable, then reads:
one schedule point and no failed read per wake-up, where `FdStream.receive_some` yields,
tries, fails with EAGAIN and yields again. A write whose lock is free goes straight out and
waits only when the pipe is full (`FdStream.send_all` yields first): a frame costs its
sender no schedule point, so the caller's next wait is the turn's only one. Callers loop
through a real wait (the reader, the next event), never on writes alone. With
`write_bound_s` set (the worker handle sets it) a write is also whole: only its waits are
shielded and bounded, so the common frame costs no cancel scope.
"""

from __future__ import annotations

import errno
import os
from typing import Any

import trio

from ._connection import Connection
from ._errors import LocalProtocolError
from ._frames import Frame, Prompt, frame_from_wire
from ._wire import Signal

READ_SIZE = 65536


class FrameWriteTimeout(trio.BrokenResourceError):
    """A frame begun on the pipe could not be finished within `write_bound_s` (the peer
    stopped reading): the pipe is as good as broken."""


class TrioFrameStream:
    """Typed frames over trio streams. `receive` returns None once the peer has closed."""

    def __init__(
        self,
        connection: Connection,
        send_stream: trio.abc.SendStream,
        receive_stream: trio.abc.ReceiveStream,
    ) -> None:
        self.connection = connection
        self._send_stream = send_stream
        self._receive_stream = receive_stream
        self._send_lock = trio.Lock()
        # With a bound, every send to a pipe is whole: a frame takes its sequence before
        # its bytes go out, and one cut off by its caller's cancel would leave a gap or
        # half a line. So whatever has to wait (the lock, a full pipe) waits shielded from
        # the caller's cancel and bounded by this, then raises `FrameWriteTimeout`; what
        # needs no wait (the common case) is written at once, with no schedule point at
        # which a cancel could land, and no cancel scope to pay for.
        self.write_bound_s: float | None = None

    @property
    def writes_whole(self) -> bool:
        """Whether every send is whole and bounded by itself (`write_bound_s`, on a pipe)."""
        return self.write_bound_s is not None and isinstance(
            self._send_stream, trio.lowlevel.FdStream
        )

    async def _lock(self) -> None:
        if not self._send_lock.locked():
            self._send_lock.acquire_nowait()  # free: no schedule point
        elif self.writes_whole:
            with self._bounded() as scope:
                await self._send_lock.acquire()  # FIFO behind the sender writing now
            if scope.cancelled_caught:
                raise FrameWriteTimeout(f"the pipe stayed busy for {self.write_bound_s} s")
        else:
            await self._send_lock.acquire()

    def _bounded(self) -> trio.CancelScope:
        assert self.write_bound_s is not None
        return trio.CancelScope(shield=True, deadline=trio.current_time() + self.write_bound_s)

    async def send(self, frame: Frame) -> None:
        """Encode and write one frame. Raises `LocalProtocolError`, or trio's stream errors
        (`BrokenResourceError`, `ClosedResourceError`) when the peer is gone."""
        await self._lock()
        try:
            await self._write(self.connection.send(frame))
        finally:
            self._send_lock.release()

    async def send_acked(self, frame: Frame) -> None:
        """Acknowledge every event received so far and send `frame`, in one write (a
        prompt carries the previous turn's last ack). Raises as `send` does; a `frame` the
        protocol refuses (`LocalProtocolError`) raises after the ack is written alone: it
        took its sequence already, and the peer waits for it."""
        await self._lock()
        try:
            ack = self.connection.ack()
            try:
                if type(frame) is Prompt and frame.artifact is None and frame.request_id:
                    wire = self.connection.wire
                    line = wire.send_prompt(frame.turn_id, frame.text, frame.request_id)
                else:
                    line = self.connection.send(frame)
            except LocalProtocolError:
                if ack is not None:
                    await self._write(ack)
                raise
            await self._write(line if ack is None else ack + line)
        finally:
            self._send_lock.release()

    async def send_ack(self, through: int | None = None) -> None:
        """Acknowledge events through sequence `through` (default: all received)."""
        await self._lock()
        try:
            line = self.connection.ack(through)
            if line is not None:
                await self._write(line)
        finally:
            self._send_lock.release()

    async def receive(self) -> Frame | None:
        """The next frame, or None at end of stream. Raises `RemoteProtocolError`."""
        wire = await self.receive_wire()
        return None if wire is None else frame_from_wire(wire)

    async def receive_wire(self) -> dict[str, Any] | None:
        """The next frame as its checked wire dict (the hot path: no typed object), or
        None at end of stream. Raises `RemoteProtocolError`."""
        wire = self.connection.wire
        while True:
            event = wire.next_frame()
            if event is Signal.NEED_DATA:
                try:
                    data = await self._read()
                except (trio.BrokenResourceError, trio.ClosedResourceError):
                    data = b""
                wire.receive_data(bytes(data))
            elif event is Signal.PEER_CLOSED:
                return None
            else:
                return event

    async def _write(self, data: bytes) -> None:
        stream = self._send_stream
        if not isinstance(stream, trio.lowlevel.FdStream):
            await stream.send_all(data)
            return
        fd = stream.fileno()  # ClosedResourceError once closed
        view = _write_now(fd, memoryview(data))
        if not view:
            return
        if self.write_bound_s is None:
            await _write_rest(fd, view)
            return
        with self._bounded() as scope:
            await _write_rest(fd, view)
        if scope.cancelled_caught:
            raise FrameWriteTimeout(f"a frame was not read within {self.write_bound_s} s")

    async def _read(self) -> bytes | bytearray:
        stream = self._receive_stream
        if not isinstance(stream, trio.lowlevel.FdStream):
            return await stream.receive_some(READ_SIZE)
        fd = stream.fileno()  # ClosedResourceError once closed
        while True:
            await trio.lowlevel.wait_readable(fd)  # the checkpoint; closing it raises
            try:
                return os.read(fd, READ_SIZE)
            except BlockingIOError:  # woken without data after all: wait again
                continue
            except OSError as error:
                if error.errno == errno.EBADF:
                    raise trio.ClosedResourceError("the pipe was closed") from None
                raise trio.BrokenResourceError from error

    async def aclose(self) -> None:
        """Close our writing end (the peer sees end of stream)."""
        async with self._send_lock:
            await self._send_stream.aclose()


def _write_now(fd: int, view: memoryview) -> memoryview:
    """Write what the pipe takes now; the rest (empty when all of it went)."""
    try:
        while view:
            view = view[os.write(fd, view) :]
    except BlockingIOError:  # the pipe is full
        pass
    except OSError as error:
        if error.errno == errno.EBADF:
            raise trio.ClosedResourceError("the pipe was closed") from None
        raise trio.BrokenResourceError from error
    return view


async def _write_rest(fd: int, view: memoryview) -> None:
    """Write `view` whole, waiting for room whenever the pipe is full (closing it raises)."""
    while view:
        await trio.lowlevel.wait_writable(fd)
        view = _write_now(fd, view)
