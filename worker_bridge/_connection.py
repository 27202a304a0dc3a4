"""The typed sans-IO connection: `WireConnection` with attrs frames at its edges.

The Node (and tests) use this; workers use `WireConnection` directly to stay stdlib-only.
Same contract: `receive_data`, `next_event()` → frame, `NEED_DATA` or `PEER_CLOSED`,
`send(frame) -> bytes`, remote and local protocol errors, ERROR state.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ._frames import Frame, frame_from_wire, frame_to_wire
from ._json import encode
from ._limits import MAX_FRAME_BYTES, MAX_UNACKED_EVENTS
from ._state import State
from ._wire import Signal, WireConnection


class Connection:
    """One side of one attempt's conversation, speaking typed frames."""

    def __init__(
        self,
        role: str,
        *,
        epoch: int,
        worker_version: str = "",
        max_frame: int = MAX_FRAME_BYTES,
        max_unacked: int = MAX_UNACKED_EVENTS,
        encoder: Callable[[Any], bytes] = encode,
        decoder: Callable[[bytes, int], Any] | None = None,
    ) -> None:
        self.wire = WireConnection(
            role,
            epoch=epoch,
            worker_version=worker_version,
            max_frame=max_frame,
            max_unacked=max_unacked,
            encoder=encoder,
            decoder=decoder,
        )

    def receive_data(self, data: bytes) -> None:
        """Give bytes read from the peer; empty bytes mean end of stream."""
        self.wire.receive_data(data)

    def next_event(self) -> Frame | Signal:
        """The next frame, `NEED_DATA` or `PEER_CLOSED`. Raises `RemoteProtocolError`."""
        wire = self.wire.next_frame()
        if isinstance(wire, Signal):
            return wire
        return frame_from_wire(wire)

    def send(self, frame: Frame) -> bytes:
        """The bytes to write for `frame`. Raises `LocalProtocolError`."""
        return self.wire.send(frame_to_wire(frame))

    def ack(self, through: int | None = None) -> bytes | None:
        """An ack through `through` (default: all received), or None when none is due."""
        return self.wire.ack(through)

    @property
    def received_sequence(self) -> int:
        """The sequence of the last frame received (to ack exactly what was consumed)."""
        return self.wire.received_sequence

    @property
    def state(self) -> State:
        return self.wire.state

    @property
    def epoch(self) -> int:
        return self.wire.epoch

    @property
    def window_open(self) -> bool:
        return self.wire.window_open
