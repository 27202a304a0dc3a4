"""The shared spool's acknowledgement at Control, deterministically (the relay and two real
`RemoteWorkerHandle`s on trio, a recording link, no sockets): one Session actor taking its
record never acknowledges another Session's record that its actor has not taken yet; beside
the two-Node test in test_shared_spool. With one cumulative ack per taken record (the code
before the evidence ledger) the first assertion fails: B's take acknowledged A's record."""

from __future__ import annotations

from typing import Any

import trio

from actors.machine import (
    AckFrame,
    LinkBoard,
    MachineRelay,
    RemoteWorkerHandle,
    TurnEventFrame,
    WorkerFrame,
)
from maia.core import FakeClock

M, A = "machine_" + "a" * 32, "assignment_" + "b" * 32
SOURCE = f"{M}.{A}"


def _relay() -> tuple[MachineRelay, list[Any]]:
    sent: list[Any] = []
    links = LinkBoard()

    async def send(frame: object) -> None:
        sent.append(frame)

    links.open(M, lambda: None, send)
    return MachineRelay(None, FakeClock(), links), sent


def _acks(sent: list[Any]) -> list[int]:
    return [f.through for f in sent if isinstance(f, AckFrame)]


async def _ready(relay: MachineRelay, attempt: str, epoch: int) -> RemoteWorkerHandle:
    handle = relay.attach_handle(M, A, attempt, epoch)
    await relay.on_frame(M, WorkerFrame("worker", attempt, "spawned", pid=100 + epoch))
    await relay.on_frame(M, WorkerFrame("worker", attempt, "initialized"))
    return handle


def _record(attempt: str, turn: str, sequence: int, kind: str = "delta") -> TurnEventFrame:
    return TurnEventFrame("turn_event", attempt, turn, kind, SOURCE, sequence, text="x")


def test_one_sessions_take_does_not_acknowledge_anothers_record() -> None:
    """Records 1 (Session A) and 2 (Session B) interleave on the shared source; B's actor
    takes 2 first: nothing is acknowledged until A's actor takes 1, then through 2."""

    async def main() -> None:
        relay, sent = _relay()
        first = await _ready(relay, "attempt_a", 1)
        second = await _ready(relay, "attempt_b", 2)
        events_a = first.prompt("turn_a", "to A")
        events_b = second.prompt("turn_b", "to B")
        async with trio.open_nursery() as nursery:
            nursery.start_soon(anext, events_a)  # sends A's prompt; waits for its record
            nursery.start_soon(anext, events_b)
            await trio.testing.wait_all_tasks_blocked()
            await relay.on_frame(M, _record("attempt_a", "turn_a", 1))
            await relay.on_frame(M, _record("attempt_b", "turn_b", 2))
        # Both records are queued at their actors; B's actor takes its record (resumes).
        with trio.move_on_after(0.5):
            await anext(events_b)
        assert _acks(sent) == []  # A's record 1 is not taken yet: nothing may be acked
        with trio.move_on_after(0.5):
            await anext(events_a)
        assert _acks(sent) == [2]

    trio.run(main)


def test_records_no_actor_will_take_are_settled_and_acknowledged() -> None:
    """A record for a turn the handle no longer runs, and records left queued when a turn's
    consumer goes away, are settled (dropped on purpose): the acknowledgement moves on."""

    async def main() -> None:
        relay, sent = _relay()
        handle = await _ready(relay, "attempt_a", 1)
        await relay.on_frame(M, _record("attempt_a", "turn_gone", 1))  # no such turn here
        assert _acks(sent) == [1]
        events = handle.prompt("turn_a", "hi")
        async with trio.open_nursery() as nursery:
            nursery.start_soon(anext, events)
            await trio.testing.wait_all_tasks_blocked()
            await relay.on_frame(M, _record("attempt_a", "turn_a", 2))
            await relay.on_frame(M, _record("attempt_a", "turn_a", 3))
        assert _acks(sent) == [1]  # 2 was handed over, not taken yet
        await events.aclose()  # the consumer went away: 2 and 3 are dropped
        await relay.on_frame(M, _record("attempt_z", "turn_z", 4))  # nobody's: settled too
        assert _acks(sent) == [1, 4]

    trio.run(main)


def test_a_copy_of_a_settled_record_is_acknowledged_again_not_stored() -> None:
    """After a reconnect the Node sends again what it holds unacknowledged; a copy of a
    record Control already settled is answered with the acknowledgement again (the first
    may be what was lost) and never reaches a Session actor twice."""

    async def main() -> None:
        relay, sent = _relay()
        handle = await _ready(relay, "attempt_a", 1)
        events = handle.prompt("turn_a", "hi")
        taken: list[int] = []

        async def consume() -> None:
            async for event in events:
                taken.append(event.sequence)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(consume)
            await trio.testing.wait_all_tasks_blocked()
            await relay.on_frame(M, _record("attempt_a", "turn_a", 1))
            await trio.testing.wait_all_tasks_blocked()
            await relay.on_frame(M, _record("attempt_a", "turn_a", 1))  # the copy
            await relay.on_frame(M, _record("attempt_a", "turn_a", 2, "completed"))
        assert taken == [1, 2]
        assert _acks(sent) == [1, 1, 2]

    trio.run(main)
