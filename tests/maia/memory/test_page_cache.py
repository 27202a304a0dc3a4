"""The Node's SQLite page caches are bounded as docs/storage.md says: the writer's and each
reader connection's `cache_size` (a real SQLite file, both reader threads)."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import trio

import storage
from maia.protocol import SystemClock

DOCS = Path(__file__).resolve().parents[3] / "docs"


def _cache_size(conn: sqlite3.Connection) -> int:
    return int(conn.execute("PRAGMA cache_size").fetchone()[0])


async def test_every_connection_has_the_documented_cache_bound(tmp_path: Path) -> None:
    """The writer keeps `DEFAULT_CACHE_MIB` MiB and each of the two readers (two reads held
    at once, so on both threads) `READER_CACHE_KIB` KiB: negative `cache_size`, in KiB."""
    both = threading.Barrier(2, timeout=10)  # each read waits for the other: two threads

    def reader_cache(conn: sqlite3.Connection) -> tuple[str, int]:
        both.wait()
        return threading.current_thread().name, _cache_size(conn)

    seen: list[tuple[str, int]] = []

    async def read() -> None:
        seen.append(await store.read(reader_cache))

    with trio.fail_after(30):
        async with storage.open_storage(tmp_path / "maia.db", clock=SystemClock()) as store:
            assert await store.write(_cache_size) == -storage.DEFAULT_CACHE_MIB * 1024
            async with trio.open_nursery() as nursery:
                nursery.start_soon(read)
                nursery.start_soon(read)
    assert len({name for name, _ in seen}) == 2
    assert [size for _, size in seen] == [-storage.READER_CACHE_KIB] * 2


def test_the_docs_state_the_bounds_the_code_sets() -> None:
    """docs/storage.md names the writer's and the readers' `cache_size` pragmas as set, and
    docs/performance.md the total they bound."""
    page = (DOCS / "storage.md").read_text("utf-8")
    assert f"PRAGMA cache_size = -{storage.DEFAULT_CACHE_MIB * 1024}" in page
    assert f"PRAGMA cache_size = -{storage.READER_CACHE_KIB}" in page
    total = storage.DEFAULT_CACHE_MIB + 2 * storage.READER_CACHE_KIB // 1024
    assert f"at most {total} MiB of SQLite pages" in (DOCS / "performance.md").read_text("utf-8")
