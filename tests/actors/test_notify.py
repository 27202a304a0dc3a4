"""`actors._notify.Notifier`: a turn's waiters are woken only by a snapshot they could use."""

from __future__ import annotations

from actors._notify import Notifier
from maia.protocol import Turn
from maia.protocol._common import TurnState


def _turn(state: TurnState, turn_id: str = "trn_1") -> Turn:
    return Turn(turn_id=turn_id, session_id="ses_1", state=state, revision=1,
                created_at="2026-01-01T00:00:00.000Z", input_preview="hi")  # fmt: skip


def test_a_snapshot_outside_the_wanted_states_wakes_nobody_then_the_wanted_one_does() -> None:
    """Waiting for an ended turn: its running snapshot keeps the event; its end sets it."""
    notifier = Notifier()
    event = notifier.subscribe("trn_1", ("completed", "failed"))
    notifier.publish([_turn("running")])
    notifier.notify("trn_1")
    assert not event.is_set()
    assert notifier.watched("trn_1")
    notifier.publish([_turn("completed")])
    notifier.notify("trn_1")
    assert event.is_set()
    assert not notifier.watched("trn_1")
    notifier.release("trn_1", event)
    assert not notifier.watched("trn_1")


def test_without_a_snapshot_or_with_a_waiter_wanting_any_change_every_notify_wakes() -> None:
    """No snapshot kept (the waiter must read storage), or a waiter with no states: woken."""
    notifier = Notifier()
    unknown = notifier.subscribe("trn_2", ("completed",))
    notifier.notify("trn_2")
    assert unknown.is_set()
    notifier.release("trn_2", unknown)

    notifier.publish([_turn("running")])
    picky = notifier.subscribe("trn_1", ("completed",))
    any_change = notifier.subscribe("trn_1")
    assert picky is any_change  # one event per key
    notifier.notify("trn_1")
    assert picky.is_set()


def test_waiters_with_different_states_share_the_union_and_release_clears_it() -> None:
    """Two waiters on one turn: either one's state wakes both; the last release forgets."""
    notifier = Notifier()
    notifier.publish([_turn("running")])
    first = notifier.subscribe("trn_1", ("completed",))
    second = notifier.subscribe("trn_1", ("running",))
    notifier.notify("trn_1")  # running: the second waiter's state
    assert first.is_set()
    assert second.is_set()
    notifier.release("trn_1", first)
    notifier.release("trn_1", second)
    again = notifier.subscribe("trn_1", ("completed",))
    notifier.notify("trn_1")  # still running: the old union is gone with its event
    assert not again.is_set()
    notifier.release("trn_1", again)
    assert not notifier.watched("trn_1")


def test_the_item_page_is_wanted_only_while_a_waiter_that_asked_for_it_waits() -> None:
    """A turn.wait-style waiter asks for no page; a turn.send-style one does until woken."""
    notifier = Notifier()
    notifier.publish([_turn("running")])
    plain = notifier.subscribe("trn_1", ("completed",))
    assert notifier.watched("trn_1")
    assert not notifier.page_wanted("trn_1")
    paged = notifier.subscribe("trn_1", ("completed",), page=True)
    assert notifier.page_wanted("trn_1")
    notifier.notify("trn_1")  # still running: nobody woken, the page still wanted
    assert notifier.page_wanted("trn_1")
    notifier.publish([_turn("completed")])
    notifier.notify("trn_1")
    assert paged.is_set()
    assert not notifier.page_wanted("trn_1")
    notifier.release("trn_1", plain)
    notifier.release("trn_1", paged)

    again = notifier.subscribe("trn_2", page=True)
    assert notifier.page_wanted("trn_2")
    notifier.release("trn_2", again)  # the last waiter left: nothing wanted any more
    assert not notifier.page_wanted("trn_2")
    assert not notifier.watched("trn_2")
