"""`abandon` at Control racing the remote worker: every order of the fence against the
turn's records (the Execution Node's worker took the turn after all) and against the
attempt's end (it exited by itself, or the fence's `exited` came). The relay and a real
`RemoteWorkerHandle` on trio, a recording link (no sockets). In each order: the turn's
consumer (the Session's pump) sees no record of the abandoned turn, at most the one `lost`
of the attempt's end (which the Session ignores: the abandon's write ended the turn), every
record is settled and acknowledged (none holds the shared spool back), the fence goes out
while the attempt lives and never after its end, and the attempt leaves the relay once,
at its `exited` frame. (The two-Node run: test_remote_interrupt.)"""

from __future__ import annotations

from typing import Any

import pytest
import trio
import trio.testing

from actors.machine import (
    AbandonFrame,
    AckFrame,
    LinkBoard,
    MachineRelay,
    TurnEventFrame,
    WorkerFrame,
)
from maia.core import FakeClock

M, A = "machine_" + "a" * 32, "assignment_" + "b" * 32
SOURCE = f"{M}.{A}"
ATTEMPT = "attempt_a"


def _record(sequence: int, kind: str) -> TurnEventFrame:
    return TurnEventFrame("turn_event", ATTEMPT, "turn_a", kind, SOURCE, sequence, text="x")


EXITED = WorkerFrame("worker", ATTEMPT, "exited", signal=15, fence_reason="fenced")
ORDERS = {
    "records_then_exit": ["abandon", "started", "completed", "exited"],
    "a_record_then_exit": ["abandon", "started", "exited", "completed"],
    "exit_before_the_frame": ["abandon_only", "exited", "send", "started"],
    "records_before_the_frame": ["abandon_only", "started", "completed", "send", "exited"],
}


@pytest.mark.parametrize("order", sorted(ORDERS))
def test_an_abandon_racing_the_workers_take_and_end_ends_the_turn_once(order: str) -> None:
    sent: list[Any] = []
    seen: list[str] = []
    links = LinkBoard()

    async def send(frame: object) -> None:
        sent.append(frame)

    links.open(M, lambda: None, send, frozenset({"abandon"}))
    relay = MachineRelay(None, FakeClock(), links)

    async def pump(events: Any) -> None:
        async for event in events:
            seen.append(event.kind)

    async def main() -> None:
        handle = relay.attach_handle(M, A, ATTEMPT, 1)
        await relay.on_frame(M, WorkerFrame("worker", ATTEMPT, "spawned", pid=7))
        await relay.on_frame(M, WorkerFrame("worker", ATTEMPT, "initialized"))
        sequence = 0
        async with trio.open_nursery() as nursery:
            nursery.start_soon(pump, handle.prompt("turn_a", "hi"))
            await trio.testing.wait_all_tasks_blocked()
            for step in ORDERS[order]:
                if step in ("abandon", "abandon_only"):
                    assert handle.abandon("turn_a", "why") is True
                    if step == "abandon":
                        await handle.send_abandon()
                elif step == "send":
                    await handle.send_abandon()
                elif step == "exited":
                    await relay.on_frame(M, EXITED)
                else:
                    sequence += 1
                    await relay.on_frame(M, _record(sequence, step))
                await trio.testing.wait_all_tasks_blocked()
            await relay.on_hello(M, ())  # a later hello: nothing left to fence or end
            await relay.ask_again(M)
            await trio.testing.wait_all_tasks_blocked()
            nursery.cancel_scope.cancel()
        assert (await handle.wait_stopped()).signal == 15

    trio.run(main)
    assert seen in ([], ["lost"])  # never a record of the abandoned turn
    assert ATTEMPT not in relay.handles
    fences = [f for f in sent if isinstance(f, AbandonFrame)]
    exit_at = ORDERS[order].index("exited")
    expected = 0 if "send" in ORDERS[order] and ORDERS[order].index("send") > exit_at else 1
    assert len(fences) == expected  # sent while the attempt lived, never after its end
    acks = [f.through for f in sent if isinstance(f, AckFrame)]
    records = sum(s in ("started", "completed") for s in ORDERS[order])
    assert (acks[-1] if acks else 0) == records  # every record settled
