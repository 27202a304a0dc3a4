"""The re-ask of an unconfirmed stop (a recovered attempt's `stop_worker`) or fence (a given-up
turn's `abandon`) is bounded per link: the hello asks, then each status at least `REASK_S`
after the last ask asks again, at most `MAX_REASKS` times; then Control stops asking on that
link, logs the attempt's outcome uncertain and keeps it live (its Session held,
`attempt_live`: spec MN0 items 8 and 10). A new link (hello) asks again, as often. The relay
on a `FakeClock` and a recording link, no sockets; before the bound, 40 statuses over ten
minutes sent 40 stops and 40 fences."""

from __future__ import annotations

import logging
from typing import Any

import pytest
import trio
import trio.testing

from actors.machine import AbandonFrame, LinkBoard, MachineRelay, StopWorkerFrame, WorkerFrame
from actors.machine._recovered import REASK_S, RecoveredAttempt
from actors.machine._relay import MAX_REASKS, RECONCILE_WAIT_S
from maia.core import FakeClock

M, A = "machine_" + "a" * 32, "assignment_" + "b" * 32
OLD = RecoveredAttempt("attempt_old", "session_old", A, M)


def _counts(sent: list[Any]) -> tuple[int, int]:
    stops = sum(isinstance(f, StopWorkerFrame) for f in sent)
    return stops, sum(isinstance(f, AbandonFrame) for f in sent)


def test_an_unanswered_stop_and_fence_are_asked_a_bounded_number_of_times(
    caplog: pytest.LogCaptureFixture,
) -> None:
    assert MAX_REASKS * REASK_S >= RECONCILE_WAIT_S  # the longest lease and its stop, covered
    clock = FakeClock()
    sent: list[Any] = []
    links = LinkBoard()

    async def send(frame: object) -> None:
        sent.append(frame)

    links.open(M, lambda: None, send, frozenset({"abandon"}))
    relay = MachineRelay(None, clock, links)
    relay.recovered.attempts[OLD.attempt_id] = OLD

    async def drain(events: Any) -> None:
        async for _ in events:
            pass

    async def statuses(count: int) -> None:
        for _ in range(count):
            clock.advance(int(REASK_S * 1000))
            await relay.ask_again(M)

    async def main() -> None:
        handle = relay.attach_handle(M, A, "attempt_new", 2)
        await relay.on_frame(M, WorkerFrame("worker", "attempt_new", "spawned", pid=7))
        await relay.on_frame(M, WorkerFrame("worker", "attempt_new", "initialized"))
        async with trio.open_nursery() as nursery:
            nursery.start_soon(drain, handle.prompt("turn_a", "hi"))
            await trio.testing.wait_all_tasks_blocked()
            assert handle.abandon("turn_a", "why")
            await handle.send_abandon()  # the Session's effect: the first fence
            await relay.on_hello(M, ("attempt_old", "attempt_new"))  # asks both
            assert _counts(sent) == (1, 2)
            with caplog.at_level(logging.ERROR, "maia.machines"):
                await statuses(40)  # ten minutes of a link that stays up, nothing confirmed
            assert _counts(sent) == (1 + MAX_REASKS, 2 + MAX_REASKS)
            uncertain = [r for r in caplog.records if "its outcome is uncertain" in r.message]
            assert len(uncertain) == 2  # once per attempt, at the bound
            assert relay.blockers(A, "session_old")[-1] == "attempt_live"  # still held

            await relay.on_hello(M, ("attempt_old", "attempt_new"))  # a new link: asks again
            await statuses(40)
            assert _counts(sent) == (2 + 2 * MAX_REASKS, 3 + 2 * MAX_REASKS)
            nursery.cancel_scope.cancel()

    trio.run(main)
