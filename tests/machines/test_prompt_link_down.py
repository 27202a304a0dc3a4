"""A prompt the machine link cannot carry (link down, machine revoked): the turn ends `lost`
(`runtime_lost`) at once, nothing ran, and the handle stays live; the relay then holds any
replacement for that Session while the earlier attempt is not seen gone (MN0 item 10).
The same path end to end, on two real Nodes: tests/review8d/test_machines_docs.py."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from actors.machine import RemoteWorkerHandle
from actors.machine._links import LinkBoard
from actors.machine._relay import RECONCILE_WAIT_S, MachineRelay
from actors.machine._relay_frames import WorkerFrame
from maia.core import MaiaError
from maia.protocol import SystemClock
from supervision.workers import WorkerSpec, WorkerState


async def _no_ack(_sequence: int) -> None:
    return None


async def _ready(link_up: bool, sent: list[object]) -> RemoteWorkerHandle:
    async def send(frame: object) -> bool:
        sent.append(frame)
        return link_up

    handle = RemoteWorkerHandle("attempt_a", 1, send, _no_ack)
    await handle.on_worker(WorkerFrame("worker", "attempt_a", "spawned", pid=7))
    await handle.on_worker(WorkerFrame("worker", "attempt_a", "initialized"))
    return handle


async def test_a_prompt_the_link_cannot_carry_ends_lost_at_once(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """Send returns False: one `lost` event saying runtime_lost, no time passing, the
    handle not stopped (the remote attempt may still run)."""
    sent: list[object] = []
    handle = await _ready(False, sent)
    started = trio.current_time()
    events = [e async for e in handle.prompt("turn_a", "hello")]
    assert [(e.kind, e.text) for e in events] == [("lost", "runtime_lost")]
    assert trio.current_time() == started
    assert len(sent) == 1
    assert handle.exit_info is None
    assert handle.state is WorkerState.READY


async def test_a_prompt_sent_waits_for_the_worker(autojump_clock: trio.testing.MockClock) -> None:
    """Send returns True: no event is made up; the turn waits for the worker's own."""
    handle = await _ready(True, [])
    with trio.move_on_after(30):
        async for _ in handle.prompt("turn_a", "hello"):
            raise AssertionError("an event no worker sent")


def test_an_attempt_not_seen_gone_holds_its_session() -> None:
    """The relay names `attempt_live` for a Session whose earlier attempt it still holds,
    not for another Session of the same assignment, and not once that attempt is gone."""
    relay = MachineRelay(None, None, LinkBoard())
    relay.attach_handle("machine_a", "assignment_a", "attempt_a", 1)
    relay.session_of["attempt_a"] = "session_a"
    assert "attempt_live" in relay.blockers("assignment_a", "session_a")
    assert "attempt_live" not in relay.blockers("assignment_a", "session_b")
    relay.handles.pop("attempt_a")
    assert "attempt_live" not in relay.blockers("assignment_a", "session_a")
    assert relay.session_of == {}


async def test_an_attempt_held_in_memory_waits_the_reconcile_bound_too(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """An attempt this Control run still holds (its Execution Node killed, or its link
    down) may run there until the Node's lease deadline plus its bounded stop, as a
    recovered one may (MN0 items 8, 10): the Session's new worker waits the same reconcile
    bound before it is `held` (it waited the 20 s placement wait)."""
    relay = MachineRelay(None, SystemClock(), LinkBoard())
    relay.attach_handle("machine_a", "assignment_a", "attempt_a", 1)
    relay.session_of["attempt_a"] = "session_a"
    spec = WorkerSpec(argv=("/bin/true",), cwd="/", activation={"sessionId": "session_a"})
    started = trio.current_time()
    with pytest.raises(MaiaError) as raised:
        await relay.start_remote("assignment_a", spec)
    waited = trio.current_time() - started
    assert raised.value.code == "held"
    assert "attempt_live" in raised.value.message
    assert RECONCILE_WAIT_S <= waited < RECONCILE_WAIT_S + 1
    assert list(relay.handles) == ["attempt_a"]  # no second attempt beside it
