"""`RemoteWorkerHandle.abandon`, decided at Control: it fences only a turn no event of
which came while the link is up; once fenced no record of the turn is taken, the `abandon`
frame goes out (again on each `send_abandon`, until the attempt is gone), and the attempt
stays live until the Execution Node reports it exited. (The end-to-end run through two real
Nodes: test_remote_interrupt.)"""

from __future__ import annotations

import trio
import trio.testing

from actors.machine import AbandonFrame, RemoteWorkerHandle, TurnEventFrame, WorkerFrame
from supervision.workers import TurnEvents, WorkerState


async def _no_ack(_sequence: int) -> None:
    return None


def _event(sequence: int, turn_id: str = "turn_a") -> TurnEventFrame:
    return TurnEventFrame("turn_event", "attempt_a", turn_id, "started", "m.a", sequence)


async def _ready(sent: list[object], link: list[bool]) -> RemoteWorkerHandle:
    async def send(frame: object) -> bool:
        sent.append(frame)
        return link[0]

    handle = RemoteWorkerHandle("attempt_a", 1, send, _no_ack, connected=lambda: link[0])
    await handle.on_worker(WorkerFrame("worker", "attempt_a", "spawned", pid=7))
    await handle.on_worker(WorkerFrame("worker", "attempt_a", "initialized"))
    return handle


async def test_an_untaken_turn_is_fenced_and_its_records_dropped() -> None:
    sent: list[object] = []
    handle = await _ready(sent, [True])
    events = handle.prompt("turn_a", "hi")  # the prompt goes out once it is iterated
    async with trio.open_nursery() as nursery:
        nursery.start_soon(_drain, events)
        await trio.testing.wait_all_tasks_blocked()
        assert handle.abandon("turn_b", "why") is False  # not the running turn
        assert handle.abandon("turn_a", "why") is True
        assert handle.abandon("turn_a", "why") is False  # fenced once
        assert handle.state is WorkerState.STOPPING
        assert await handle.on_turn_event(_event(1)) is False  # a start after: not taken
        await handle.send_abandon()
        await handle.send_abandon()  # the relay's hello: once more
        assert sent[1:] == [AbandonFrame("abandon", "attempt_a", "turn_a", "why")] * 2
        await handle.on_worker(WorkerFrame("worker", "attempt_a", "exited", signal=15))
    await handle.send_abandon()  # gone: nothing more to fence
    assert len(sent) == 3
    assert (await handle.wait_stopped()).signal == 15


async def test_a_taken_turn_or_a_down_link_is_not_fenced() -> None:
    sent: list[object] = []
    link = [True]
    handle = await _ready(sent, link)
    events = handle.prompt("turn_a", "hi")
    async with trio.open_nursery() as nursery:
        nursery.start_soon(_drain, events)
        await trio.testing.wait_all_tasks_blocked()
        link[0] = False
        assert handle.abandon("turn_a", "why") is False  # the fence could not reach the Node
        link[0] = True
        assert await handle.on_turn_event(_event(1)) is True
        assert handle.abandon("turn_a", "why") is False  # the worker began it
        assert handle.abandoned is None
        nursery.cancel_scope.cancel()


async def _drain(events: TurnEvents) -> None:
    async for _ in events:
        pass
