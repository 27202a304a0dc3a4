"""The attempts the relay remembers as ended by expiry (to ask a machine that still runs one
to stop it at its hello) are bounded, whichever way expiry ended them: a handle Control held,
or an attempt an earlier Control run left live (session 11's review found the second path
unbounded). The relay on a `FakeClock`, its storage a recorder of the writes it is given."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import trio

from actors.machine import LinkBoard, MachineRelay
from actors.machine._recovered import RecoveredAttempt
from actors.machine._relay import EXPIRED_KEPT
from maia.core import FakeClock

M, A = "machine_" + "a" * 32, "assignment_" + "b" * 32


class _Writes:
    """What the relay asks storage to write (the close of each recovered attempt)."""

    def __init__(self) -> None:
        self.written: list[Callable[[Any], Any]] = []

    async def write(self, fn: Callable[[Any], Any]) -> None:
        self.written.append(fn)


def test_attempts_ended_by_expiry_are_remembered_within_the_bound() -> None:
    store = _Writes()
    relay = MachineRelay(store, FakeClock(), LinkBoard())
    count = EXPIRED_KEPT + 44
    for n in range(count):
        attempt = RecoveredAttempt(f"attempt_{n:04d}", f"session_{n:04d}", A, M)
        relay.recovered.attempts[attempt.attempt_id] = attempt

    trio.run(relay.expire, M, A)

    assert len(store.written) == count  # every recovered attempt was closed
    assert not relay.recovered.pending(M)
    assert len(relay.expired) == EXPIRED_KEPT
    # The newest are kept, the oldest forgotten first.
    assert f"attempt_{count - 1:04d}" in relay.expired
    assert "attempt_0000" not in relay.expired
    assert set(relay.expired.values()) == {M}
