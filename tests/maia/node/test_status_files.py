"""node.status's check of the configuration files: reused while young, shared while in flight.

Real storage and real files; the monotonic time is passed in, so no test waits on a clock.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import trio
import trio.lowlevel

from maia.config import UserConfig
from maia.core import SystemClock
from maia.protocol import ConfigScopeStatus
from maia.service import AdmittedConfigs
from maia.service._admitted import FILES_FRESH_MS
from storage import Storage, open_storage


class CountingRead:
    """A `read` for `AdmittedConfigs.files`: counts its calls, each answer a new list."""

    def __init__(self) -> None:
        self.calls = 0

    async def __call__(self) -> list[ConfigScopeStatus]:
        self.calls += 1
        await trio.lowlevel.checkpoint()
        return []


def _count_store_reads(store: Storage, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    reads: list[int] = []
    original = store.read

    async def read(fn: Any) -> Any:
        reads.append(1)
        await trio.sleep(0.01)  # keep the check in flight while others arrive
        return await original(fn)

    monkeypatch.setattr(store, "read", read)
    return reads


async def test_a_file_edit_is_seen_within_the_bound(tmp_path: Path) -> None:
    """A check younger than FILES_FRESH_MS is reused; at the bound the edited file's new
    `lstat` is taken and the files are read again."""
    home = tmp_path / "home"
    home.mkdir()
    config = home / "config.jsonc"
    config.write_text("{}")
    async with open_storage(tmp_path / "maia.db", clock=SystemClock()) as store:
        admitted = AdmittedConfigs(store, UserConfig())
        read = CountingRead()
        first = await admitted.files(home, read, 1000)
        assert read.calls == 1
        config.write_text('{"schemaVersion": "maia.user-config.v1"}')
        assert await admitted.files(home, read, 1000 + FILES_FRESH_MS - 1) is first
        assert read.calls == 1
        second = await admitted.files(home, read, 1000 + FILES_FRESH_MS)
        assert read.calls == 2
        assert second is not first


async def test_an_unchanged_file_is_not_read_again_after_the_bound(tmp_path: Path) -> None:
    """Past the bound the fingerprint is taken again, but the files are read again only
    when it changed."""
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.jsonc").write_text("{}")
    async with open_storage(tmp_path / "maia.db", clock=SystemClock()) as store:
        admitted = AdmittedConfigs(store, UserConfig())
        read = CountingRead()
        first = await admitted.files(home, read, 0)
        assert await admitted.files(home, read, 10 * FILES_FRESH_MS) is first
        assert read.calls == 1


async def test_concurrent_callers_share_one_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ten callers arriving while a check is in flight take its answer: one fingerprint
    (one storage read), one read of the files."""
    home = tmp_path / "home"
    home.mkdir()
    async with open_storage(tmp_path / "maia.db", clock=SystemClock()) as store:
        admitted = AdmittedConfigs(store, UserConfig())
        store_reads = _count_store_reads(store, monkeypatch)
        read = CountingRead()
        answers: list[list[ConfigScopeStatus]] = []

        async def ask() -> None:
            answers.append(await admitted.files(home, read, 5000))

        async with trio.open_nursery() as nursery:
            for _ in range(10):
                nursery.start_soon(ask)
        assert len(store_reads) == 1
        assert read.calls == 1
        assert len(answers) == 10
        assert all(answer is answers[0] for answer in answers)


async def test_an_admission_is_seen_at_once(tmp_path: Path) -> None:
    """An admission drops the kept check: the next call, however soon, checks again."""
    home = tmp_path / "home"
    home.mkdir()
    async with open_storage(tmp_path / "maia.db", clock=SystemClock()) as store:
        admitted = AdmittedConfigs(store, UserConfig())
        read = CountingRead()
        await admitted.files(home, read, 0)
        admitted.admitted()
        await admitted.files(home, read, 1)
        assert read.calls == 2


async def test_a_failed_check_is_not_kept(tmp_path: Path) -> None:
    """A check whose read fails answers nobody from it: the next caller checks again."""
    home = tmp_path / "home"
    home.mkdir()
    async with open_storage(tmp_path / "maia.db", clock=SystemClock()) as store:
        admitted = AdmittedConfigs(store, UserConfig())

        async def failing() -> list[ConfigScopeStatus]:
            raise OSError("unreadable")

        with pytest.raises(OSError, match="unreadable"):
            await admitted.files(home, failing, 0)
        read = CountingRead()
        await admitted.files(home, read, 1)
        assert read.calls == 1
