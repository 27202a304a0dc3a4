"""Worker attempts an earlier run of this Control Node placed on a machine and never saw
end: after a Control restart (even `kill -9`) their workers may still run on the Execution
Node, so they stay live here until that Node says they are gone (spec MN0 item 10).

Session recovery leaves such an attempt's row open (`actors.session._sql_recovery`) and
fails the turn it ran `runtime_lost` (never re-run); the relay loads them at its start
(`RecoveredAttempts.load`). Their Sessions read `attempt_live` in placement, so no new
worker starts beside the old one. At every hello of the machine each one is settled: one
the Node no longer lists is closed; one it still runs is asked to stop (`stop_worker`,
reason `control_restarted`), again at the first status `REASK_S` after the last ask while
that link stays up (the relay's `ask_again`: a frame lost on a link that did not drop would
otherwise wait for the next hello; at most `MAX_REASKS` times per link, then its outcome is
logged uncertain and it stays live) and at each later hello, until its `exited` (or
`refused`) frame comes, and then closed. A machine that never reconnects keeps them until
its assignment's lease expires (the horizon a maximum TTL after the restart, plus the
Node's bounded stop): then they are closed by expiry (`MachineRelay.expire`).
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Final

import attrs

from supervision.leases import MAX_ROUND_TRIP_MS, STOP_BOUND_MS

from ._relay_frames import StopWorkerFrame

log = logging.getLogger("maia.machines")
STOP_REASON: Final = "control_restarted"
GONE_AT_HELLO: Final = "control_restarted: not running at the Execution Node's hello"
STOPPED: Final = "control_restarted: stopped by the Execution Node"
EXPIRED: Final = "control_restarted: the machine's lease expired with no report of it"
Send = Callable[[str, object], Awaitable[bool]]  # (machine, frame) -> False: link down
# A stop asked is confirmed within the Execution Node's bounded stop and a round trip: no
# `exited` frame by then, and the stop (or its answer) is taken as lost and asked again.
REASK_S: Final = (STOP_BOUND_MS + MAX_ROUND_TRIP_MS) / 1000


@attrs.frozen
class RecoveredAttempt:
    attempt_id: str
    session_id: str
    assignment_id: str
    machine_id: str

    @property
    def source(self) -> str:
        """The evidence source its records came on (the assignment's spool)."""
        return f"{self.machine_id}.{self.assignment_id}"


def recovered_attempts(conn: sqlite3.Connection, node_epoch: int) -> list[RecoveredAttempt]:
    """The open attempts of placed Sessions that earlier Control runs recorded."""
    rows = conn.execute(
        "SELECT w.attempt_id, w.session_id, p.assignment_id, a.machine_id"
        " FROM worker_attempts w JOIN machine_placements p ON p.session_id = w.session_id"
        " JOIN machine_assignments a ON a.assignment_id = p.assignment_id"
        " WHERE w.ended_ms IS NULL AND w.node_epoch < ? ORDER BY w.epoch",
        (node_epoch,),
    ).fetchall()
    return [RecoveredAttempt(*(str(v) for v in row)) for row in rows]


def close_attempt(conn: sqlite3.Connection, attempt_id: str, reason: str, now_ms: int) -> None:
    conn.execute(
        "UPDATE worker_attempts SET state = 'exited', ended_ms = ?, end_reason = ?"
        " WHERE attempt_id = ? AND ended_ms IS NULL",
        (now_ms, reason, attempt_id),
    )


class RecoveredAttempts:
    """See the module. `store` is the Node's storage, `clock` its clock."""

    def __init__(self, store: Any, clock: Any) -> None:
        self.store = store
        self.clock = clock
        self.attempts: dict[str, RecoveredAttempt] = {}
        self.stops_asked = 0  # stop_worker frames sent (for tests and logs)

    async def load(self) -> None:
        found = await self.store.read(lambda conn: recovered_attempts(conn, self.store.node_epoch))
        self.attempts = {a.attempt_id: a for a in found}
        if found:
            log.warning("%d worker attempts on machines were live when this Control Node last"
                        " stopped: their Sessions wait for the machines to stop them",
                        len(found))  # fmt: skip

    def sessions(self) -> set[str]:
        return {a.session_id for a in self.attempts.values()}

    def get(self, machine_id: str, attempt_id: str) -> RecoveredAttempt | None:
        found = self.attempts.get(attempt_id)
        return found if found is not None and found.machine_id == machine_id else None

    def pending(self, machine_id: str) -> list[RecoveredAttempt]:
        return [a for a in self.attempts.values() if a.machine_id == machine_id]

    async def on_hello(self, machine_id: str, live: Sequence[str], send: Send) -> None:
        """Close what the machine no longer runs; ask it to stop the rest (again)."""
        for attempt in self.pending(machine_id):
            if attempt.attempt_id not in live:
                await self.close(attempt, GONE_AT_HELLO)
        await self.ask(machine_id, send)

    async def ask(self, machine_id: str, send: Send) -> None:
        """Ask the machine to stop each of its attempts not yet reported gone."""
        for attempt in self.pending(machine_id):
            await self.ask_one(attempt, send)

    async def ask_one(self, attempt: RecoveredAttempt, send: Send) -> None:
        frame = StopWorkerFrame("stop_worker", attempt.attempt_id, STOP_REASON)
        if await send(attempt.machine_id, frame):  # not sent: the next hello asks again
            self.stops_asked += 1
            log.info("attempt %s (Session %s): asked %s to stop it", attempt.attempt_id,
                     attempt.session_id, attempt.machine_id)  # fmt: skip

    def take(self, attempt_id: str) -> RecoveredAttempt | None:
        """Stop holding the attempt (its close follows: `close`); None if it is not held."""
        return self.attempts.pop(attempt_id, None)

    async def close(self, attempt: RecoveredAttempt, reason: str) -> None:
        """The Execution Node confirmed it gone: its row ends and its Session is free."""
        now = self.clock.wall_ms()
        await self.store.write(lambda c: close_attempt(c, attempt.attempt_id, reason, now))
        self.attempts.pop(attempt.attempt_id, None)
        log.info("attempt %s (Session %s) is gone: %s", attempt.attempt_id,
                 attempt.session_id, reason)  # fmt: skip
