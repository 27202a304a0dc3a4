"""The delayed flush of a running turn's buffered rows is armed only when its end is not in
the same batch of worker events (then the end's commit writes them), on `MockClock` through
the worker seam."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import trio.testing

from actors._flush import FlushTimer

from ._harness import open_harness


@pytest.fixture
def jump_clock() -> trio.testing.MockClock:
    """Virtual time that only the test moves: `open_harness` drives it while quiet."""
    return trio.testing.MockClock()


def _counting(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    armed = [0]
    arm = FlushTimer.arm

    def counted(self: FlushTimer, *args: Any) -> float:
        armed[0] += 1
        return arm(self, *args)

    monkeypatch.setattr(FlushTimer, "arm", counted)
    return armed


@pytest.mark.parametrize("batched", [True, False])
async def test_a_batch_with_the_turn_end_arms_no_flush(
    tmp_path: Path, jump_clock: trio.testing.MockClock, monkeypatch: pytest.MonkeyPatch,
    batched: bool,
) -> None:  # fmt: skip
    """Three echo turns: in one batch each (as the real handle reads a fast turn), no flush
    is armed and their text is stored; a slow turn's `started`, alone, arms one each."""
    armed = _counting(monkeypatch)
    async with open_harness(tmp_path) as h:
        h.workers.batched = batched
        session_id = await h.session()
        slow = "" if batched else "/sleep 100 "  # started, then the rest 100 ms later
        turns = [await h.send(session_id, f"{slow}hello {n}") for n in range(3)]
        done = [await h.wait_turn(t, "completed", "failed") for t in turns]
    assert [t.output_text for t in done] == ["hello 0", "hello 1", "hello 2"]
    assert [t.started_at is not None for t in done] == [True] * 3
    if batched:
        assert armed[0] == 0
    else:
        assert armed[0] >= 3
