"""A `Clock` that reads trio's clock, for tests that run under `trio.testing.MockClock`.

The runtime waits with trio (`trio.sleep`) and reads time from the injected `Clock`; under a
`MockClock` (autojump) trio's time jumps, so the clock the runtime reads must jump with it.
`TrioClock` gives both readings from `trio.current_time()` plus fixed origins, so a durable
timer armed at wall time W fires when trio's clock says W has come. It is never persisted
as trio time: it is converted to the wall and monotonic readings every clock gives.
"""

from __future__ import annotations

import contextlib

import attrs
import trio


@attrs.define
class TrioClock:
    """Wall and monotonic milliseconds moving with trio's clock (call inside `trio.run`)."""

    wall_origin_ms: int = 1_764_460_800_000  # 2025-11-30T00:00:00.000Z at trio time 0
    monotonic_origin_ms: int = 0
    _last_ms: int = 0  # the last reading in the trio thread, for readers in other threads

    def _now_ms(self) -> int:
        with contextlib.suppress(RuntimeError):  # a storage thread: keep the last reading
            self._last_ms = int(trio.current_time() * 1000)
        return self._last_ms

    def wall_ms(self) -> int:
        return self.wall_origin_ms + self._now_ms()

    def monotonic_ms(self) -> int:
        return self.monotonic_origin_ms + self._now_ms()

    @property
    def suspend_aware(self) -> bool:
        return True
