"""A real Node whose wall clock is shifted (for routine slots seconds away), run as a process:

    python -m tests.maia.service._shifted HOME OFFSET_MS

and the clock itself, for in-process tests. Only wall time moves; monotonic time is real.
"""

from __future__ import annotations

import sys
from pathlib import Path

import attrs
import trio

from maia.core import SystemClock

QUARTER_MS = 15 * 60 * 1000


@attrs.frozen
class ShiftedClock:
    """The real clock, with wall time shifted (the Node never reads wall time for expiry)."""

    offset_ms: int
    real: SystemClock = attrs.field(factory=SystemClock)

    def wall_ms(self) -> int:
        return self.real.wall_ms() + self.offset_ms

    def monotonic_ms(self) -> int:
        return self.real.monotonic_ms()

    @property
    def suspend_aware(self) -> bool:
        return self.real.suspend_aware


def offset_to_slot(seconds_before: float, period_ms: int = QUARTER_MS) -> int:
    """The offset that puts wall time `seconds_before` the next slot of a schedule firing
    every `period_ms` from midnight UTC (`*/15 * * * *` by default)."""
    now = SystemClock().wall_ms()
    slot = (now // period_ms + 1) * period_ms
    return slot - int(seconds_before * 1000) - now


async def _main(home: Path, offset_ms: int) -> None:
    from maia.node import NodeConfig, NodeHome, serve_node

    async with trio.open_nursery() as nursery:
        await nursery.start(serve_node, NodeConfig(NodeHome(home), clock=ShiftedClock(offset_ms)))
        print("ready", flush=True)


if __name__ == "__main__":
    trio.run(_main, Path(sys.argv[1]), int(sys.argv[2]))
