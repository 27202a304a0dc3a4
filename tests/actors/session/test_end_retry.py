"""A turn's end whose commit storage refuses (review8c D3: a full disk) is kept and written
once storage takes writes again, tried on a doubling backoff meanwhile; refused past the
bound, the worker is failed the existing way and that write is retried too. On `MockClock`
through the worker seam; the fault is a refused `SessionCore.commit` (the real-process test
with a real full disk is tests/review8c/test_disk_full_mid_turn.py)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

from actors.session import END_RETRIES, RETRY_MAX_S
from actors.session._actor import SessionCore
from maia.core import MaiaError

from ._harness import open_harness


@pytest.fixture
def jump_clock() -> trio.testing.MockClock:
    """Virtual time that only the test moves: `open_harness` drives it while quiet."""
    return trio.testing.MockClock()


class _Disk:
    """While `full`, every Session commit is refused `unavailable`; `refused` counts them."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.full = False
        self.refused = 0
        commit = SessionCore.commit

        async def refusing(core: SessionCore, body: Callable[..., Any], **kw: Any) -> Any:
            if self.full:
                self.refused += 1
                raise MaiaError("unavailable", "storage is unavailable: disk full",
                                {"target": "storage"})  # fmt: skip
            return await commit(core, body, **kw)

        monkeypatch.setattr(SessionCore, "commit", refusing)


async def _state(h: Any, turn_id: str) -> str:
    return str((await h.store.read(lambda c: c.execute(
        "SELECT state FROM turns WHERE turn_id = ?", (turn_id,)).fetchone()))[0])  # fmt: skip


async def test_an_end_refused_for_a_while_is_written_once_storage_is_back(
    tmp_path: Path, jump_clock: trio.testing.MockClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The worker ends its turn 1 s into a 4 s refusal: the turn stays running, its end is
    tried again on a backoff (a handful of tries, not a busy loop), then it ends completed
    with its text and the next turn runs."""
    disk = _Disk(monkeypatch)
    async with open_harness(tmp_path) as h:
        session_id = await h.session()
        turn = await h.send(session_id, "/sleep 1000 hello")
        await h.wait_turn(turn, "running")
        disk.full = True
        await trio.sleep(4)
        assert await _state(h, turn) == "running"
        assert 3 <= disk.refused <= 10  # 50 ms doubling: ~7 tries in 3 s
        disk.full = False
        done = await h.wait_turn(turn, "completed", "failed")
        after = await h.wait_turn(await h.send(session_id, "after"), "completed", "failed")
    assert (done.state, done.output_text) == ("completed", "hello")
    assert (after.state, after.output_text) == ("completed", "after")


async def test_an_end_refused_past_the_bound_fails_the_worker_once_storage_is_back(
    tmp_path: Path, jump_clock: trio.testing.MockClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Refused END_RETRIES times: the worker is failed as lost; that write, refused too, is
    retried every RETRY_MAX_S at most; once storage is back the turn reads failed and names
    the unwritten end, and the next turn runs on a new worker."""
    disk = _Disk(monkeypatch)
    async with open_harness(tmp_path) as h:
        session_id = await h.session()
        turn = await h.send(session_id, "/sleep 1000 hello")
        await h.wait_turn(turn, "running")
        disk.full = True
        await trio.sleep(1 + END_RETRIES * RETRY_MAX_S)
        tried = disk.refused
        assert END_RETRIES < tried <= END_RETRIES + 20
        await trio.sleep(10 * RETRY_MAX_S)
        assert 8 <= disk.refused - tried <= 11  # the worker's rows: every 5 s
        assert await _state(h, turn) == "running"
        disk.full = False
        done = await h.wait_turn(turn, "completed", "failed")
        after = await h.wait_turn(await h.send(session_id, "after"), "completed", "failed")
    assert (done.state, done.failure_reason) == ("failed", "worker_failed")
    assert "end could not be written" in (done.failure_message or "")
    assert (after.state, after.output_text) == ("completed", "after")
