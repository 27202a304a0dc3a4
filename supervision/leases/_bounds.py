"""The MN0 lease bounds, as named constants, and the relation the spec pins between them.

Every number a lease machine compares lives here, in integer milliseconds (lease timestamps
carry at most millisecond precision, the precision the TTL arithmetic compares). The credited
window — minimum TTL minus the maximum round trip minus the clock error budget — equals the
span four missed heartbeats cover: 27 - 5 - 2 = 20 = 5 x 4 seconds. An accepted grant
therefore always leaves the Node at least that local lease. The module checks the relation
at import so a change to one number that breaks it cannot ship.

`MAX_TTL_MS`, `STOP_BOUND_MS` and the spool quotas are new policy chosen by MN0 (see
docs/leases.md). There is deliberately no reassignment bound: no constant lets a
replacement launch (item 10).
"""

from __future__ import annotations

from typing import Final

MIN_TTL_MS: Final = 27_000
"""The shortest grant a schema accepts (expiresAt - issuedAt)."""

MAX_TTL_MS: Final = 60_000
"""The longest grant a schema accepts; also how far a discontinuity pushes every horizon.

Chosen: twice the spec's 30 s example, so a renewal cadence of half the TTL still leaves
room, while a Control discontinuity blocks placement for at most one minute."""

MAX_ROUND_TRIP_MS: Final = 5_000
"""A grant that arrives later than this after the request's first send is refused."""

CLOCK_ERROR_BUDGET_MS: Final = 2_000
"""Subtracted from every local deadline; also the wall/monotonic tripwire threshold."""

HEARTBEAT_INTERVAL_MS: Final = 5_000
HEARTBEAT_MISSES: Final = 4
"""Placement needs fewer than this many consecutive missed heartbeats (item 9)."""

CREDITED_WINDOW_MS: Final = MIN_TTL_MS - MAX_ROUND_TRIP_MS - CLOCK_ERROR_BUDGET_MS

STOP_BOUND_MS: Final = 10_000
"""Stopping -> stopped must be confirmed within this bound, or the Node keeps reporting
stopping and the assignment stays uncertain (item 8). From the spec's item 10 example: a
deadline at t=28 with a stop that may run to t=38."""

SPOOL_MAX_RECORDS: Final = 10_000
SPOOL_MAX_BYTES: Final = 8 * 1024 * 1024
SPOOL_MAX_UNACKNOWLEDGED_AGE_MS: Final = 10 * 60_000
"""Reaching any of the three spool bounds stops admission (chosen policy)."""

if CREDITED_WINDOW_MS != HEARTBEAT_INTERVAL_MS * HEARTBEAT_MISSES:  # pragma: no cover
    raise AssertionError("MN0 bounds: min TTL - round trip - clock budget != heartbeat x misses")
if not MIN_TTL_MS <= MAX_TTL_MS:  # pragma: no cover
    raise AssertionError("MN0 bounds: the minimum TTL exceeds the maximum")
