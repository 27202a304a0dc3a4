"""A turn's items past the places its key has (`item_key = turn_no << 24 | seq`, migration
`_PAGES_TURN_ITEMS_ON_TURN_KEY`: seq at most 2**24 - 1): the Session on real storage over the
in-process worker stand-in, on MockClock. The first turn's item numbering starts just below
the limit (a worker that streamed 16,777,215 items, which the test cannot stream), so its
answer is the turn's 2**24th item."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
import trio.testing

from actors.session._attempt import TurnBuffer

from ._harness import open_harness

LAST_PLACE = (1 << 24) - 1  # the highest seq the key trigger accepts


@pytest.fixture
def jump_clock() -> trio.testing.MockClock:
    """Virtual time that only the test moves: the harness drives it while quiet."""
    return trio.testing.MockClock()


async def test_a_turn_past_its_items_key_range_fails_and_the_session_goes_on(
    tmp_path: Path,
    jump_clock: trio.testing.MockClock,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A turn whose next item would be its 2**24th ends failed with a reason of its own (no
    actor crash, no runtime_lost) and stores no item outside its key range; the Session's
    next turn completes."""
    first = [True]
    reset = TurnBuffer.reset

    def reset_near_the_limit(self: TurnBuffer) -> None:
        reset(self)
        if first[0]:  # only the first dispatched turn starts at the last place
            first[0] = False
            self.item_seq = LAST_PLACE

    monkeypatch.setattr(TurnBuffer, "reset", reset_near_the_limit)
    caplog.set_level(logging.ERROR, logger="maia.actors")
    async with open_harness(tmp_path) as h:
        session_id = await h.session()
        over = await h.send(session_id, "past the last place")
        ended = await h.wait_turn(over, "completed", "failed", "interrupted")
        assert ended.state == "failed"
        # the Node's refusal, named: not an actor crash taken for a lost worker
        assert ended.failure_reason == "item_limit_exceeded"
        assert not [r for r in caplog.records if r.name == "maia.actors" and "crashed" in r.msg]
        outside = await h.store.read(
            lambda c: c.execute(
                "SELECT count(*) FROM turn_items WHERE turn_id = ? AND seq > ?",
                (over, LAST_PLACE),
            ).fetchone()[0]
        )
        assert outside == 0
        after = await h.send(session_id, "hello again")
        assert (await h.wait_turn(after, "completed", "failed")).output_text == "hello again"
