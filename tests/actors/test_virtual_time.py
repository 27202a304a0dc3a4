"""The driven test clock (tests/actors/_virtual_time.py) the MockClock tests on real storage
use: it never jumps while a storage write or read runs in its thread, and it stops at every
deadline exactly."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest
import trio
import trio.testing

import storage
from actors import TrioClock

from ._virtual_time import driven_clock

CLOCK = TrioClock()


@pytest.fixture
def clock() -> trio.testing.MockClock:
    """No autojump: only the driver moves it."""
    return trio.testing.MockClock()


async def test_the_clock_stands_still_while_storage_works(
    tmp_path: Path, clock: trio.testing.MockClock
) -> None:
    """A write and a read that take 1.2 s of real time (longer than the old autojump
    threshold) see no virtual time pass, so a sleeper due in 5 s is not woken under them;
    afterwards it wakes at its deadline exactly."""
    woke: list[float] = []

    async def sleeper() -> None:
        await trio.sleep(5)
        woke.append(trio.current_time())

    def slow(conn: sqlite3.Connection) -> int:
        time.sleep(1.2)  # real time, in a storage fn (the write blocks the loop meanwhile)
        return int(conn.execute("SELECT 1").fetchone()[0])

    async with (
        storage.open_storage(tmp_path / "maia.db", clock=CLOCK) as store,
        trio.open_nursery() as nursery,
        driven_clock(store),
    ):
        start = trio.current_time()
        nursery.start_soon(sleeper)
        assert await store.write(slow) == 1
        assert await store.read(slow) == 1
        assert (trio.current_time(), woke) == (start, [])
        await trio.sleep(60)
        assert woke == [start + 5]
