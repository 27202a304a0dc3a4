"""The clock that logic asks for time.

Two readings: wall time (for timestamps people read) and a suspend-aware monotonic reading
(`CLOCK_BOOTTIME` on Linux, which keeps counting through suspend) for deadlines and expiry.
Wall time never decides expiry. Tests use `FakeClock`, which moves only when told.
"""

from __future__ import annotations

import time
from typing import Protocol

import attrs


class Clock(Protocol):
    """Where logic gets time. Both readings are integer milliseconds."""

    def wall_ms(self) -> int:
        """Milliseconds since the Unix epoch (may step; never used for expiry)."""
        ...

    def monotonic_ms(self) -> int:
        """A reading that never goes back and counts through suspend."""
        ...

    @property
    def suspend_aware(self) -> bool:
        """Whether `monotonic_ms` counts time spent suspended."""
        ...


_BOOTTIME = getattr(time, "CLOCK_BOOTTIME", None)


class SystemClock:
    """The real clock: `CLOCK_REALTIME` and `CLOCK_BOOTTIME` (falls back to `CLOCK_MONOTONIC`)."""

    def wall_ms(self) -> int:
        return time.time_ns() // 1_000_000

    def monotonic_ms(self) -> int:
        if _BOOTTIME is not None:
            return time.clock_gettime_ns(_BOOTTIME) // 1_000_000
        return time.monotonic_ns() // 1_000_000

    @property
    def suspend_aware(self) -> bool:
        return _BOOTTIME is not None


@attrs.define
class FakeClock:
    """A clock for tests: both readings move only through `advance`, `step_wall` or `suspend`."""

    wall: int = 1_764_460_800_000  # 2025-11-30T00:00:00.000Z
    monotonic: int = 0
    aware: bool = True

    def wall_ms(self) -> int:
        return self.wall

    def monotonic_ms(self) -> int:
        return self.monotonic

    @property
    def suspend_aware(self) -> bool:
        return self.aware

    def advance(self, ms: int) -> None:
        """Let `ms` milliseconds pass on both readings."""
        if ms < 0:
            raise ValueError("time does not go back")
        self.wall += ms
        self.monotonic += ms

    def step_wall(self, ms: int) -> None:
        """Step the wall clock alone (an NTP correction or a user changing the date)."""
        self.wall += ms
