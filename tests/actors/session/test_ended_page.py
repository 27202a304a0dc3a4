"""An ended turn a waiting `turn.send` waits on is published with its first item page, the
page `turn.show` reads (so it answers without a read); an unwatched one, or one only a
`turn.wait` waits on (it answers with the turn alone), is published without a page."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

from actors.session import show_page, turn_view

from .._virtual_time import settle
from ._harness import open_harness

# Plain and budget-cut; each sleeps 50 ms of mock time first, so the test watches before
# the end (a turn ending before anyone watches gets no page: that answer reads).
TEXTS = ("/sleep 50 hello page", "/sleep 50 " + "\x01" * 65_000)


@pytest.fixture
def jump_clock() -> trio.testing.MockClock:
    """Virtual time that only the test moves: the harness drives it while quiet."""
    return trio.testing.MockClock()


async def _wait_as_turn_send(h: Any, turn_id: str) -> None:
    """Wait for the turn's end as a waiting turn.send does: subscribed, asking for the item
    page, before each look at the turn; subscribed again after each wake-up."""
    notifier = h.runtime.notifier
    with trio.fail_after(120):
        while True:
            watching = notifier.subscribe(turn_id, ("completed", "failed"), page=True)
            try:
                turn = notifier.turn(turn_id)
                if turn is not None and turn.state in ("completed", "failed"):
                    return
                with trio.move_on_after(5):
                    await watching.wait()
            finally:
                notifier.release(turn_id, watching)


async def test_a_watched_ended_turn_is_published_with_its_show_page(
    tmp_path: Path, jump_clock: trio.testing.MockClock
) -> None:
    """For plain and budget-cut turns watched while they run, the published page and
    snapshot equal `show_page` and `turn_view` read from storage after the end; the page is
    taken once."""
    async with open_harness(tmp_path) as h:
        session_id = await h.session()
        notifier = h.runtime.notifier
        for text in TEXTS:
            turn_id = await h.send(session_id, text)
            await _wait_as_turn_send(h, turn_id)
            page = notifier.take_page(turn_id)
            assert page is not None, text[:20]
            assert page == await h.store.read(partial(show_page, turn_id=turn_id, after_seq=0))
            held = notifier.turn(turn_id)  # the snapshot it was published with
            assert held is not None
            assert (page.turn.state, page.turn.revision) == (held.state, held.revision)
            # built from the actor's own writes (no read): the row as storage has it
            assert held == await h.store.read(partial(turn_view, turn_id=turn_id))
            assert page.items, "an ended turn's page lists its items"
            assert notifier.take_page(turn_id) is None  # once


async def test_a_turn_watched_without_asking_for_the_page_gets_none(
    tmp_path: Path, jump_clock: trio.testing.MockClock
) -> None:
    """Watched as turn.wait watches (no page asked): the snapshot is published, no page."""
    async with open_harness(tmp_path) as h:
        session_id = await h.session()
        notifier = h.runtime.notifier
        turn_id = await h.send(session_id, "a turn.wait waits")
        watching = notifier.subscribe(turn_id, ("completed", "failed"))
        try:
            await h.wait_turn(turn_id, "completed", "failed")
        finally:
            notifier.release(turn_id, watching)
        held = notifier.turn(turn_id)
        assert held is not None
        assert held.state == "completed"
        assert notifier.take_page(turn_id) is None


async def test_an_unwatched_ended_turn_gets_no_page(
    tmp_path: Path, jump_clock: trio.testing.MockClock
) -> None:
    """Nobody waiting on the turn: its snapshot is published, no page is built."""
    async with open_harness(tmp_path) as h:
        session_id = await h.session()
        ended = trio.Event()  # woken by the journal, not by subscribing to the turn

        def listen(events: tuple[Any, ...]) -> None:
            if any(e.event_type == "turn.completed" for e in events):
                ended.set()

        h.store.add_commit_listener(listen)
        turn_id = await h.send(session_id, "nobody waits")
        with trio.fail_after(120):
            await ended.wait()  # committed; the actor publishes once answered:
            await settle(h.store)  # every task blocked, storage idle
        turn = h.runtime.notifier.turn(turn_id)
        assert turn is not None
        assert turn.state == "completed"
        assert h.runtime.notifier.take_page(turn_id) is None
