"""The hub and the per-subscriber buffers: live records wait for their turn's start,
coalescing loses no text, overflow only counts, bad subscribe requests get typed errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import hypothesis.strategies as st
import pytest
import trio
import trio.testing
from hypothesis import given, settings

from maia.core import ERROR_CODES, MaiaError, SystemClock
from maia.observe import Subscriber, open_hub, parse_subscribe
from maia.observe._shape import Entry, LiveItem
from storage import EventRecord, open_storage


def _delta(item: str, text: str, number: int = 1) -> Entry:
    return Entry(live=LiveItem("item.delta", "s", "t", item, "message", text, 0, number=number))


def _event(position: int, event_type: str = "x", **payload: Any) -> EventRecord:
    root = f"event_{position}"  # a root event is its own cause and correlation
    return EventRecord(position, root, event_type, "session", "s", position,
                       None, "p", "s", None, root, root, "operator", 0, payload)  # fmt: skip


def test_coalescing_when_behind_keeps_all_text_and_never_changes_shared_entries() -> None:
    """Behind by a frame, deltas of one item merge (text concatenated); shared entries stay."""
    buffer = Subscriber(capacity=100, coalesce_after=2)
    shared = [_delta("i1", str(n), n) for n in range(10)]
    for entry in shared:
        buffer.push(entry)
    taken = buffer.take(100)
    assert len(taken) == 2
    assert "".join(e.live.text for e in taken if e.live) == "0123456789"
    assert [e.live.text for e in shared if e.live] == [str(n) for n in range(10)]
    assert buffer.coalesced == 8
    assert taken[-1].live is not None
    assert taken[-1].live.coalesced == 9


def test_overflow_marks_counts_and_keeps_what_was_queued() -> None:
    """Past capacity nothing more is queued; each refused entry is counted as dropped."""
    buffer = Subscriber(capacity=5, coalesce_after=5)
    for position in range(1, 9):
        buffer.push(Entry(_event(position)))
    assert buffer.overflowed
    assert buffer.dropped == 3
    taken = buffer.take(64)
    assert [e.event.position for e in taken if e.event] == [1, 2, 3, 4, 5]
    buffer.put_back(taken[3:])
    assert [e.event.position for e in buffer.take(64) if e.event] == [4, 5]


async def test_a_lingering_wait_ends_once_a_frame_is_queued(
    mock_clock: trio.testing.MockClock,
) -> None:
    """Woken by one entry, a wait lingers for more, but returns as soon as a frame's worth is
    queued, not after the whole linger: a burst cannot overflow a reader that waits here.
    (The clock never moves: a wait that slept its linger out would never return.)"""
    buffer = Subscriber(capacity=128, coalesce_after=64)
    done = trio.Event()

    async def reader() -> None:
        await buffer.wait(timeout_s=10.0, linger_s=5.0)
        done.set()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(reader)
        await trio.testing.wait_all_tasks_blocked()
        buffer.push(Entry(_event(1)))
        await trio.testing.wait_all_tasks_blocked()
        assert not done.is_set()  # lingering: one entry is not a frame
        for position in range(2, 65):
            buffer.push(Entry(_event(position)))
        await trio.testing.wait_all_tasks_blocked()
        assert done.is_set()
        assert trio.current_time() == 0
        assert len(buffer) == 64
        assert not buffer.overflowed


async def test_live_records_wait_for_their_turn_start_then_feed_open_items(
    tmp_path: Path,
) -> None:
    """Deltas published before turn.started is committed are held (concatenated) and released
    after it; open items hold the text so far until item.completed."""
    async with (
        open_storage(tmp_path / "db.sqlite", clock=SystemClock(), synchronous="OFF") as store,
        open_hub(store, SystemClock()) as hub,
    ):
        subscriber = hub.subscribe_session("s")
        hub.publish_live("item.started", "s", "t", "i", "message")
        hub.publish_live("item.delta", "s", "t", "i", "message", "ab")
        hub.publish_live("item.delta", "s", "t", "i", "message", "cd")
        hub.publish_live("item.bogus", "s", "t", "i", "message", "ignored")
        assert len(subscriber) == 0
        assert hub.open_items("s") == []
        hub.on_commit((_event(1, "turn.started", turnId="t"),))
        entries = subscriber.take(10)
        names = [
            e.event.event_type if e.event else e.live.record if e.live else "" for e in entries
        ]
        assert names == ["turn.started", "item.started", "item.delta"]
        assert entries[2].live is not None
        assert entries[2].live.text == "abcd"
        hub.publish_live("item.delta", "s", "t", "i", "message", "ef")
        assert hub.open_items("s") == [
            {"turnId": "t", "itemId": "i", "kind": "message", "text": "abcdef"}
        ]
        hub.on_commit((_event(2, "item.completed", turnId="t", itemId="i"),))
        assert hub.open_items("s") == []
        hub.unsubscribe(subscriber)
        assert hub.statistics().session_subscribers == 0


async def test_with_nobody_subscribed_the_hub_still_keeps_what_a_later_subscriber_needs(
    tmp_path: Path,
) -> None:
    """Commits and live records with no subscriber build no entries, yet the delivered
    position, the running turn and its open items move as with one: a Session subscriber
    that attaches mid-turn finds the text so far and gets the next live record at once,
    positioned at the last commit; an observer attaching later gets the next event."""
    from maia.observe import ObservationQuery

    async with (
        open_storage(tmp_path / "db.sqlite", clock=SystemClock(), synchronous="OFF") as store,
        open_hub(store, SystemClock()) as hub,
    ):
        hub.publish_live("item.delta", "s", "t", "i", "message", "ab")  # held: not started
        hub.on_commit((_event(1, "turn.dispatching", turnId="t"),
                       _event(2, "turn.started", turnId="t")))  # fmt: skip
        hub.publish_live("item.delta", "s", "t", "i", "message", "cd")
        assert hub.delivered_position == 2
        assert hub.open_items("s") == [
            {"turnId": "t", "itemId": "i", "kind": "message", "text": "abcd"}
        ]
        assert hub.dispatch_of("s", "t") is not None
        attached = hub.subscribe_session("s")
        hub.publish_live("item.delta", "s", "t", "i", "message", "ef")
        (live,) = [e.live for e in attached.take(10)]
        assert live is not None
        assert (live.text, live.position, live.number) == ("ef", 2, 3)
        observer = hub.subscribe_observations(ObservationQuery())
        hub.on_commit((_event(3, "item.completed", turnId="t", itemId="i"),))
        assert [e.event.position for e in observer.take(10) if e.event] == [3]
        assert [e.event.position for e in attached.take(10) if e.event] == [3]
        assert hub.open_items("s") == []
        hub.unsubscribe(attached)
        hub.unsubscribe(observer)


async def test_statistics_name_which_subscribers_overflowed(tmp_path: Path) -> None:
    """Of three subscribers, the two whose buffers overflowed are named by their peers (the
    one that keeps up is not), and an overflowed one that leaves is counted as ended."""
    from maia.observe import ObservationQuery

    async with (
        open_storage(tmp_path / "db.sqlite", clock=SystemClock(), synchronous="OFF") as store,
        open_hub(store, SystemClock(), buffer_capacity=4) as hub,
    ):
        slow = hub.subscribe_observations(ObservationQuery(), peer="127.0.0.1:5001")
        keeping_up = hub.subscribe_observations(ObservationQuery(), peer="127.0.0.1:5002")
        attached = hub.subscribe_session("s", peer="[::1]:5003")
        for position in range(1, 7):
            hub.on_commit((_event(position),))
            keeping_up.take(64)
        stats = hub.statistics()
        assert (stats.overflowing, stats.overflowing_peers) == (2, ("127.0.0.1:5001", "[::1]:5003"))
        hub.unsubscribe(slow)
        stats = hub.statistics()
        assert (stats.overflowed, stats.overflowing_peers) == (1, ("[::1]:5003",))
        assert not keeping_up.overflowed
        hub.unsubscribe(attached)


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4)
    ),
    max_leaves=12,
)
_PARAMS = st.fixed_dictionaries(
    {},
    optional={
        "query": st.dictionaries(
            st.sampled_from(["domains", "limit", "sessionIds", "includeContent", "bogus"]),
            _JSON,
            max_size=3,
        ),
        "cursor": _JSON,
        "sessionId": _JSON,
    },
)


@settings(max_examples=100)
@given(
    request_id=st.one_of(st.integers(min_value=-2, max_value=2**54), st.text(max_size=3), _JSON),
    method=st.sampled_from(["observe.events", "session.attach", "node.status", ""]),
    params=_PARAMS,
)
def test_any_subscribe_request_is_parsed_or_refused_with_a_typed_error(
    request_id: Any, method: str, params: dict[str, Any]
) -> None:
    """Whatever the subscribe frame holds, parsing returns or raises MaiaError of the set."""
    frame = json.dumps({"id": request_id, "method": method, "params": params})
    code = None
    try:
        parse_subscribe(frame)
    except MaiaError as error:
        code = error.code
    assert code is None or code in ERROR_CODES


@pytest.mark.parametrize(
    ("frame", "code"),
    [
        (b"[1]", "invalid_request"),
        (b'{"id": 1, "method": "observe.events", "id": 2}', "invalid_request"),
        (
            b'{"id": 1, "method": "observe.events", "params": {"query": {"limit": NaN}}}',
            "invalid_request",
        ),
        (b"[" * 100_000, "frame_too_large"),
        (b'{"id": 1, "method": "node.status"}', "unknown_method"),
        (
            b'{"id": 1, "method": "observe.events", "params": {"query": {"limit": -1}}}',
            "validation_failed",
        ),
        (b'{"id": 1, "method": "session.attach", "params": {}}', "validation_failed"),
    ],
)
def test_bad_subscribe_requests_name_the_problem(frame: bytes, code: str) -> None:
    """Malformed JSON, duplicate keys, NaN, oversize, unknown method, bad fields: typed errors."""
    with pytest.raises(MaiaError) as refused:
        parse_subscribe(frame)
    assert refused.value.code == code
