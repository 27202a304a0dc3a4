"""The queue a turn's events take from the frame reader to the consumer
(`supervision._turn_events.TurnEventQueue`): the bound, the end, the consumer leaving, and
a parked `get` woken or cancelled, under trio's MockClock; and, for any sequence of the
calls a turn makes, what a trio memory channel of the same capacity would have done (the
real-worker tests beside this one run it end to end)."""

from __future__ import annotations

from typing import Any

import pytest
import trio
import trio.testing
from hypothesis import given
from hypothesis import strategies as st

from supervision._turn_events import TurnEventQueue


def test_events_come_out_in_order_and_a_put_at_the_bound_is_refused_unqueued() -> None:
    queue: TurnEventQueue[int] = TurnEventQueue(2)
    queue.put_nowait(1)
    queue.put_nowait(2)
    with pytest.raises(trio.WouldBlock):
        queue.put_nowait(3)
    assert queue.get_nowait() == 1
    queue.put_nowait(4)  # room again once one was taken
    assert [queue.get_nowait(), queue.get_nowait()] == [2, 4]
    with pytest.raises(trio.WouldBlock):
        queue.get_nowait()


def test_after_the_end_what_was_queued_is_taken_then_the_end_is_seen() -> None:
    queue: TurnEventQueue[str] = TurnEventQueue(8)
    queue.put_nowait("started")
    queue.put_nowait("completed")
    queue.end()
    queue.end()  # idempotent
    with pytest.raises(trio.ClosedResourceError):
        queue.put_nowait("late")
    assert [queue.get_nowait(), queue.get_nowait()] == ["started", "completed"]
    with pytest.raises(trio.EndOfChannel):
        queue.get_nowait()


def test_a_consumer_that_left_drops_the_queue_and_refuses_later_puts() -> None:
    queue: TurnEventQueue[str] = TurnEventQueue(8)
    queue.put_nowait("delta")
    with queue:
        pass  # leaving the block abandons the queue
    with pytest.raises(trio.BrokenResourceError):
        queue.put_nowait("more")
    with pytest.raises(trio.ClosedResourceError):
        queue.get_nowait()
    queue.end()  # the producer still ends it quietly
    with pytest.raises(trio.BrokenResourceError):
        queue.put_nowait("after the end")


@pytest.mark.parametrize("capacity", [0, -1])
def test_a_capacity_under_one_is_refused(capacity: int) -> None:
    with pytest.raises(ValueError, match="capacity: must be 1 or more"):
        TurnEventQueue(capacity)


async def test_a_parked_get_wakes_for_a_put_and_for_the_end(
    autojump_clock: trio.testing.MockClock,
) -> None:
    queue: TurnEventQueue[str] = TurnEventQueue(8)
    got: list[str] = []

    async def consume() -> None:
        while True:
            try:
                got.append(await queue.get())
            except trio.EndOfChannel:
                got.append("<end>")
                return

    async with trio.open_nursery() as nursery:
        nursery.start_soon(consume)
        await trio.sleep(1)  # the consumer is parked, nothing queued
        assert got == []
        queue.put_nowait("a")
        await trio.sleep(1)
        assert got == ["a"]
        queue.put_nowait("b")
        queue.put_nowait("c")
        queue.end()
    assert got == ["a", "b", "c", "<end>"]


async def test_a_cancelled_get_takes_nothing_and_the_next_get_sees_the_event(
    autojump_clock: trio.testing.MockClock,
) -> None:
    queue: TurnEventQueue[str] = TurnEventQueue(8)
    with trio.move_on_after(5) as waited:
        await queue.get()
    assert waited.cancelled_caught
    queue.put_nowait("x")  # no waiter left to wake: it stays queued
    with trio.fail_after(1):
        assert await queue.get() == "x"


async def test_get_is_a_checkpoint_even_with_an_event_queued(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """A cancelled scope's `get` raises Cancelled and leaves the event where it was, as a
    channel's `receive` does."""
    queue: TurnEventQueue[str] = TurnEventQueue(8)
    queue.put_nowait("kept")
    with trio.CancelScope() as scope:
        scope.cancel()
        await queue.get()
        pytest.fail("get did not checkpoint")
    assert queue.get_nowait() == "kept"


async def test_abandoning_while_another_task_waits_ends_its_get(
    autojump_clock: trio.testing.MockClock,
) -> None:
    queue: TurnEventQueue[str] = TurnEventQueue(8)
    raised: list[type[BaseException]] = []

    async def consume() -> None:
        try:
            await queue.get()
        except trio.ClosedResourceError as error:
            raised.append(type(error))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(consume)
        await trio.sleep(1)
        queue.abandon()
    assert raised == [trio.ClosedResourceError]


async def test_a_second_waiting_task_is_refused(autojump_clock: trio.testing.MockClock) -> None:
    queue: TurnEventQueue[str] = TurnEventQueue(8)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(queue.get)
        await trio.sleep(1)
        with pytest.raises(trio.BusyResourceError):
            await queue.get()
        queue.put_nowait("for the first")
    with pytest.raises(trio.WouldBlock):
        queue.get_nowait()  # the first waiter took it


# -- the same answers as a trio memory channel ---------------------------------------------

_CALLS = st.lists(
    st.one_of(
        st.tuples(st.just("put"), st.integers(0, 99)),
        st.tuples(st.sampled_from(["get", "end", "abandon"]), st.just(0)),
    ),
    max_size=40,
)


def _outcome(call: Any, *args: object) -> object:
    """What a call returned, or the type of what it raised."""
    try:
        return call(*args)
    except (trio.WouldBlock, trio.EndOfChannel, trio.BrokenResourceError,
            trio.ClosedResourceError) as error:  # fmt: skip
        return type(error)


@given(capacity=st.integers(1, 4), calls=_CALLS)
def test_each_call_answers_as_a_memory_channel_of_the_same_capacity(
    capacity: int, calls: list[tuple[str, int]]
) -> None:
    """The turn's calls (the reader's `send_nowait` and `close`, the consumer's
    `receive_nowait` and leaving) and the queue's, one by one: the same values and the same
    refusals. The reader stops calling its end once closed, as `_end_turn` does."""
    queue: TurnEventQueue[int] = TurnEventQueue(capacity)
    send, receive = trio.open_memory_channel[int](capacity)
    ended = False
    for name, value in calls:
        if name == "put" and not ended:
            assert _outcome(queue.put_nowait, value) == _outcome(send.send_nowait, value)
        elif name == "end" and not ended:
            ended = True
            queue.end()
            send.close()
        elif name == "get":
            assert _outcome(queue.get_nowait) == _outcome(receive.receive_nowait)
        elif name == "abandon":
            queue.abandon()
            receive.close()
