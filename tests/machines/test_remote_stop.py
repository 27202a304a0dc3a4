"""A remote worker's stop on a link that is down: refused at once (no confirmation can come
back), not after the 25 s bound; on a live link it still waits for the confirmation."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from actors.machine import RemoteWorkerHandle
from actors.machine._remote_worker import STOP_BOUND_S
from supervision.workers import WorkerFailed


async def _no_ack(_sequence: int) -> None:
    return None


def _handle(sent: list[object], *, link_up: bool) -> RemoteWorkerHandle:
    async def send(frame: object) -> bool:
        sent.append(frame)
        return link_up

    return RemoteWorkerHandle("attempt_a", 1, send, _no_ack)


async def test_a_stop_the_link_cannot_carry_fails_at_once(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """Send returns False (no link): WorkerFailed with no time passing on the clock."""
    sent: list[object] = []
    handle = _handle(sent, link_up=False)
    started = trio.current_time()
    with pytest.raises(WorkerFailed, match="stop not confirmed"):
        await handle.stop()
    assert trio.current_time() == started
    assert len(sent) == 1


async def test_a_stop_sent_waits_for_its_confirmation_within_the_bound(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """Send returns True but nothing confirms: WorkerFailed after STOP_BOUND_S, not before."""
    sent: list[object] = []
    handle = _handle(sent, link_up=True)
    started = trio.current_time()
    with pytest.raises(WorkerFailed, match="stop not confirmed"):
        await handle.stop()
    assert trio.current_time() - started == pytest.approx(STOP_BOUND_S)
