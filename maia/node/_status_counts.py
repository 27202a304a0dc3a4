"""node.status's storage read, shared between callers and kept briefly.

A monitor polling node.status from many connections should cost one storage read per
`STATUS_TTL_MS`, not one per call (each read is a thread hop and two scans of the
Session and turn tables).
"""

from __future__ import annotations

import sqlite3

import trio

from storage import Storage

STATUS_TTL_MS = 250  # how stale node.status's counts may be

Counts = tuple[int, dict[str, int], int]  # schema version, Sessions by state, queued turns


def _read_counts(conn: sqlite3.Connection) -> Counts:
    version = int(conn.execute("PRAGMA user_version").fetchone()[0])
    by_state = {
        str(state): int(count)
        for state, count in conn.execute("SELECT state, count(*) FROM sessions GROUP BY state")
    }
    # Each Session's unfinished turns, from its lowest (`sessions.unfinished_from`).
    queued = int(conn.execute(
        "SELECT count(*) FROM sessions s CROSS JOIN turns t ON t.session_id = s.session_id"
        " AND t.seq >= s.unfinished_from WHERE t.state = 'queued'"
    ).fetchone()[0])  # fmt: skip
    return version, by_state, queued


class CountsCache:
    """At most one read in flight, its answer reused for `ttl_ms` (monotonic).

    Failures are not cached: the next call reads again. A new storage handle (after a
    restart) is never answered from the old one's counts.
    """

    def __init__(self, ttl_ms: int = STATUS_TTL_MS) -> None:
        self._ttl_ms = ttl_ms
        self._store: object = None
        self._value: Counts | None = None
        self._read_at_ms = 0
        self._pending: trio.Event | None = None

    def fresh(self, store: Storage, now_ms: int) -> Counts | None:
        """The counts when a read of `store` at most `ttl_ms` old has them, else None."""
        return self._value if self._fresh(store, now_ms) else None

    async def read(self, store: Storage, now_ms: int) -> Counts:
        """The counts, at most `ttl_ms` old. Raises what the storage read raises."""
        if self._fresh(store, now_ms):
            return self._value_or_raise()
        if self._pending is not None:
            await self._pending.wait()  # someone else is reading: share their answer
            if self._store is store and self._value is not None:
                return self._value
        self._pending = pending = trio.Event()
        try:
            value = await store.read(_read_counts)
            self._store, self._value, self._read_at_ms = store, value, now_ms
            return value
        finally:
            self._pending = None
            pending.set()

    def _fresh(self, store: Storage, now_ms: int) -> bool:
        return (
            self._store is store
            and self._value is not None
            and now_ms - self._read_at_ms < self._ttl_ms
        )

    def _value_or_raise(self) -> Counts:
        assert self._value is not None
        return self._value
