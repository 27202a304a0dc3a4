"""A Session actor whose row another writer changed answers `storage_conflict` once, then
reloads its memory from storage: the next command works (real SQLite, a second writer on
the same database file, as the conformance fixtures do)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
import trio
import trio.testing

from actors.session import Command, RenameSession
from maia.core import MaiaError
from maia.protocol import new_id

from ._harness import Harness
from ._harness import open_harness as _open


@pytest.fixture
def jump_clock() -> trio.testing.MockClock:
    """Virtual time that only the test moves: no autojump; `_open` drives it while quiet."""
    return trio.testing.MockClock()


def _second_writer(path: Path, session_id: str) -> None:
    """Another writer on the Node's database moves the Session's row underneath its actor."""
    conn = sqlite3.connect(path, timeout=10)
    try:
        with conn:
            changed = conn.execute(
                "UPDATE sessions SET revision = revision + 1 WHERE session_id = ?", (session_id,)
            ).rowcount
    finally:
        conn.close()
    assert changed == 1


async def _rename(h: Harness, session_id: str, title: str) -> str:
    command = Command(new_id("command"), "local-user", f"sha256:{title}")
    result = await h.runtime.ask(session_id, RenameSession(command, title, None))
    return str(result.result["session"]["title"])


async def _row(h: Harness, session_id: str) -> tuple[str, int]:
    query = "SELECT title, revision FROM sessions WHERE session_id = ?"
    return tuple(await h.store.read(lambda c: c.execute(query, (session_id,)).fetchone()))


async def test_a_rename_after_a_storage_conflict_works(
    tmp_path: Path, jump_clock: trio.testing.MockClock
) -> None:
    """The first rename after another writer moved the row is refused `storage_conflict`
    and changes nothing; the actor reloads, so the next rename is applied."""
    async with _open(tmp_path) as h:
        session_id = await h.session()
        assert await _rename(h, session_id, "first") == "first"
        _second_writer(tmp_path / "maia.db", session_id)
        before = await _row(h, session_id)
        with pytest.raises(MaiaError) as refused:
            await _rename(h, session_id, "conflicted")
        assert refused.value.code == "storage_conflict"
        assert await _row(h, session_id) == before  # nothing written
        assert await _rename(h, session_id, "after") == "after"
        assert await _row(h, session_id) == ("after", before[1] + 1)


async def test_a_turn_after_a_storage_conflict_runs(
    tmp_path: Path, jump_clock: trio.testing.MockClock
) -> None:
    """A send whose dispatch moves the changed row is refused `storage_conflict`; the
    actor reloads, the next send runs to completion on the Session's worker."""
    async with _open(tmp_path) as h:
        session_id = await h.session()
        await h.wait_turn(await h.send(session_id, "warm"), "completed")
        _second_writer(tmp_path / "maia.db", session_id)
        with pytest.raises(MaiaError) as refused:
            await h.send(session_id, "conflicted")
        assert refused.value.code == "storage_conflict"
        done = await h.wait_turn(await h.send(session_id, "after"), "completed", "failed")
        assert done.output_text == "after"
        assert [p for w in h.workers.spawned for p in w.prompts] == ["warm", "after"]
