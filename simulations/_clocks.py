"""Virtual time and the clocks each simulated party reads.

The harness owns one true time `t` (integer ms). Each party reads two clocks derived from it:
a monotonic clock (rate error in ppm; suspend-aware or not) and a wall clock (offset, rate
error, steps, and — like a host RTC — counting through suspend). Readings are integers,
as the lease machines expect. Nothing here reads the real time.
"""

from __future__ import annotations

import attrs

from supervision.leases import Reading


@attrs.define
class PartyClock:
    """One party's monotonic and wall clocks, advanced lazily to the true time asked for."""

    mono_ppm: int = 0
    wall_ppm: int = 0
    wall_offset_ms: int = 0
    suspend_aware: bool = True
    suspended: bool = False
    _t: int = 0
    _mono: float = 1_000_000.0
    _wall: float = 1_764_460_800_000.0

    def __attrs_post_init__(self) -> None:
        self._wall += self.wall_offset_ms

    def _advance(self, t: int) -> None:
        dt = t - self._t
        if dt < 0:
            raise ValueError("true time does not go back")
        if dt:
            if self.suspend_aware or not self.suspended:
                self._mono += dt * (1 + self.mono_ppm / 1e6)
            self._wall += dt * (1 + self.wall_ppm / 1e6)
            self._t = t

    def read(self, t: int) -> Reading:
        """Both readings at true time `t` (which never goes back)."""
        self._advance(t)
        return Reading(int(self._mono), int(self._wall))

    def step_wall(self, t: int, ms: int) -> None:
        """An NTP step or a user changing the date."""
        self._advance(t)
        self._wall += ms

    def set_suspended(self, t: int, suspended: bool) -> None:
        self._advance(t)
        self.suspended = suspended

    def true_time_of(self, t: int, mono_ms: int) -> float:
        """When (true time) this monotonic clock will read `mono_ms`, assuming no suspend."""
        self._advance(t)
        return t + (mono_ms - self._mono) / (1 + self.mono_ppm / 1e6)
