"""The writer's SQLite page cache: bounded, small by default, configurable."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

import storage
from maia.core import SystemClock


def _cache_size(conn: sqlite3.Connection) -> int:
    return int(conn.execute("PRAGMA cache_size").fetchone()[0])


def test_the_default_is_small_and_the_variable_overrides_it() -> None:
    """Unset or blank: 1 MiB; MAIA_STORAGE_CACHE_MIB=N: N MiB."""
    assert storage.DEFAULT_CACHE_MIB == 1
    assert storage.cache_mib_setting({}) == 1
    assert storage.cache_mib_setting({storage.CACHE_MIB_VARIABLE: " "}) == 1
    assert storage.cache_mib_setting({storage.CACHE_MIB_VARIABLE: "64"}) == 64


@pytest.mark.parametrize("raw", ["0", "-5", "1025", "big", "1.5"])
def test_a_bad_value_is_refused_naming_the_variable(raw: str) -> None:
    """Anything but an integer 1-1024 raises ValueError naming the variable and the value."""
    with pytest.raises(ValueError, match=rf"MAIA_STORAGE_CACHE_MIB .*{raw!r}"):
        storage.cache_mib_setting({storage.CACHE_MIB_VARIABLE: raw})


async def test_the_writer_connection_uses_the_bound(tmp_path: Path) -> None:
    """open_storage(cache_mib=N) sets the writer's cache_size to -N*1024 (KiB), 1 MiB unset."""
    async with storage.open_storage(tmp_path / "a.db", clock=SystemClock(), cache_mib=2) as store:
        assert await store.write(_cache_size) == -2 * 1024
    async with storage.open_storage(tmp_path / "b.db", clock=SystemClock()) as store:
        assert await store.write(_cache_size) == -storage.DEFAULT_CACHE_MIB * 1024


async def test_the_environment_reaches_the_writer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With MAIA_STORAGE_CACHE_MIB set, a storage opened without cache_mib uses it."""
    monkeypatch.setenv(storage.CACHE_MIB_VARIABLE, "16")
    async with storage.open_storage(tmp_path / "c.db", clock=SystemClock()) as store:
        assert await store.write(_cache_size) == -16 * 1024


async def test_an_out_of_range_argument_opens_nothing(tmp_path: Path) -> None:
    """cache_mib outside 1-1024 raises ValueError before any file is created."""
    with pytest.raises(ValueError, match="cache_mib"):
        async with storage.open_storage(tmp_path / "d.db", clock=SystemClock(), cache_mib=0):
            pass
    assert not (tmp_path / "d.db").exists()
