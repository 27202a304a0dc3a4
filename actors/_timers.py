"""Durable timers: persisted wake-ups that fire after a Node restart at their deadline.

A timer is a row of `actor_timers`, keyed by (kind, actor, name), written in the same
transaction as the transition that arms it (`_write`): a table row's `timeout_ms` arms the
aggregate's state timer (`state:<id>`, carrying the row's `on_timeout` event and the revision
it was armed at), and an actor's "wake me at T" (`Wake`) arms a named one (cron, backoff, a
lease deadline). Arming a key again replaces it; a transition of the aggregate removes its
state timer.

`DurableTimers.serve` keeps the armed timers in a heap and, when one falls due, asks its
actor `Fired` through the kind's registry (which spawns the actor from storage if it is
passivated), then deletes the row (guarded by its deadline, so a timer re-armed meanwhile
stays). A timer its actor could not take, or whose handling was refused with a retryable
error (its write failed: `unavailable` while the disk is full), fires again `RETRY_MS`
later, unless the actor armed it anew meanwhile; any other refusal is the actor's decision.
A Node that starts loads every row: a timer armed in this Node run keeps its
monotonic deadline; one armed by an earlier run (another node epoch, whose monotonic clock
means nothing now) falls due at its wall-clock deadline, or at once if that has passed.
Delivery is at least once: a Node that dies between the ask and the delete fires it
again, so the receiving actor ignores a state timer whose revision is not its aggregate's.

Time comes from the injected `Clock` (both readings); the waiting is trio's, so under
`trio.testing.MockClock` with a clock that reads trio's time (`TrioClock`), tests jump.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import sqlite3
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

import attrs
import trio

from maia.core import Clock, MaiaError

from ._errors import AskTimedOut

log = logging.getLogger("maia.actors")
RETRY_MS = 1_000  # a timer its actor could not take, or refused (unavailable), fires again then


def state_timer_name(aggregate_id: str) -> str:
    return f"state:{aggregate_id}"


@attrs.frozen
class Wake:
    """'Wake me at T' (`at_wall_ms`) or 'in D' (`after_ms`), by name; `cancel` disarms it."""

    name: str
    at_wall_ms: int | None = None
    after_ms: int | None = None
    cancel: bool = False
    subject: str | None = None  # what it is about (a turn), told back as `Fired.subject_id`

    def due_wall_ms(self, now_wall_ms: int) -> int:
        if self.at_wall_ms is not None:
            return self.at_wall_ms
        return now_wall_ms + max(0, self.after_ms or 0)


@attrs.frozen
class Fired:
    """What an actor is told when one of its timers falls due."""

    name: str
    event: str | None  # a state timer's `on_timeout` event (its value); None for a Wake
    subject_id: str | None  # the aggregate whose state timer it is
    subject_revision: int | None  # fire only if the aggregate is still at this revision
    due_wall_ms: int


@attrs.frozen
class TimerRow:
    kind: str
    actor_id: str
    name: str
    event: str | None
    subject_id: str | None
    subject_revision: int | None
    due_wall_ms: int
    due_monotonic_ms: int
    node_epoch: int

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.kind, self.actor_id, self.name)

    def fired(self) -> Fired:
        return Fired(self.name, self.event, self.subject_id, self.subject_revision,
                     self.due_wall_ms)  # fmt: skip


_COLUMNS = ("kind, actor_id, name, event, subject_id, subject_revision, due_wall_ms,"
            " due_monotonic_ms, node_epoch")  # fmt: skip


def arm_timer(conn: sqlite3.Connection, timer: TimerRow) -> None:
    conn.execute(
        f"INSERT OR REPLACE INTO actor_timers ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        attrs.astuple(timer),
    )


def disarm_timer(conn: sqlite3.Connection, kind: str, actor_id: str, name: str) -> None:
    conn.execute(
        "DELETE FROM actor_timers WHERE kind = ? AND actor_id = ? AND name = ?",
        (kind, actor_id, name),
    )


def disarm_kind(conn: sqlite3.Connection, kind: str) -> list[tuple[str, str]]:
    """Remove every timer of `kind` (a kind whose timers a Node restart makes moot, by its
    recovery); the (actor, name) of each, for `DurableTimers.committed`."""
    keys = [(r[0], r[1]) for r in conn.execute(
        "SELECT actor_id, name FROM actor_timers WHERE kind = ?", (kind,))]  # fmt: skip
    conn.execute("DELETE FROM actor_timers WHERE kind = ?", (kind,))
    return keys


def load_timers(conn: sqlite3.Connection) -> list[TimerRow]:
    return [TimerRow(*r) for r in conn.execute(f"SELECT {_COLUMNS} FROM actor_timers")]


Deliver = Callable[[str, Fired], Awaitable[None]]


class DurableTimers:
    """The timers of every kind of one runtime. `await nursery.start(timers.serve)`; kinds
    `route(kind, deliver)` before their timers can fire."""

    def __init__(self, store: Any, clock: Clock) -> None:
        self._store = store
        self._clock = clock
        self._armed: dict[tuple[str, str, str], TimerRow] = {}
        self._heap: list[tuple[int, int, TimerRow]] = []
        self._seq = itertools.count()
        self._routes: dict[str, Deliver] = {}
        self._changed = trio.Event()
        self._open = trio.Event()
        self.fired = 0

    def open(self) -> None:
        """Start firing (the runtime calls it once every kind has opened and routed)."""
        self._open.set()

    def route(self, kind: str, deliver: Deliver) -> None:
        """Where `kind`'s timers go: `deliver(actor_id, fired)` (the registry's tell)."""
        self._routes[kind] = deliver
        self._changed.set()

    def committed(self, kind: str, disarmed: Iterable[tuple[str, str]],
                  armed: Iterable[TimerRow]) -> None:  # fmt: skip
        """A write committed these timer rows ((actor, name) removed): mirror them."""
        for actor_id, name in disarmed:
            self._armed.pop((kind, actor_id, name), None)
        for timer in armed:
            self._schedule(timer, timer.due_monotonic_ms)

    def _schedule(self, timer: TimerRow, due_monotonic_ms: int) -> None:
        self._armed[timer.key] = timer
        heapq.heappush(self._heap, (due_monotonic_ms, next(self._seq), timer))
        self._changed.set()

    def armed(self, kind: str | None = None) -> list[TimerRow]:
        """The timers armed now (for tests and node.status)."""
        return [t for t in self._armed.values() if kind is None or t.kind == kind]

    async def serve(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Load the persisted timers, then fire each as it falls due, until cancelled."""
        rows = await self._store.read(load_timers)
        epoch = self._store.node_epoch
        now_wall, now_mono = self._clock.wall_ms(), self._clock.monotonic_ms()
        for row in rows:
            if row.node_epoch == epoch:
                due = row.due_monotonic_ms
            else:  # armed by an earlier Node run: its wall deadline is what survives
                due = now_mono + max(0, row.due_wall_ms - now_wall)
            self._schedule(row, due)
        task_status.started()
        await self._open.wait()
        async with trio.open_nursery() as nursery:
            while True:
                await self._wait_for_due()
                while self._heap and self._heap[0][0] <= self._clock.monotonic_ms():
                    _, _, timer = heapq.heappop(self._heap)
                    if self._armed.get(timer.key) is timer and timer.kind in self._routes:
                        del self._armed[timer.key]
                        nursery.start_soon(self._fire, timer)
                    elif self._armed.get(timer.key) is timer:  # no route yet: keep it
                        self._schedule(timer, self._clock.monotonic_ms() + RETRY_MS)

    async def _wait_for_due(self) -> None:
        while True:
            self._changed = trio.Event()
            # Drop heap entries that were replaced or disarmed.
            while self._heap and self._armed.get(self._heap[0][2].key) is not self._heap[0][2]:
                heapq.heappop(self._heap)
            if self._heap:
                left_ms = self._heap[0][0] - self._clock.monotonic_ms()
                if left_ms <= 0:
                    return
                with trio.move_on_after(left_ms / 1000):
                    await self._changed.wait()
            else:
                await self._changed.wait()

    async def _fire(self, timer: TimerRow) -> None:
        self.fired += 1  # each firing, a retried one again (its actor has it in hand)
        try:
            await self._routes[timer.kind](timer.actor_id, timer.fired())
        except MaiaError as error:
            if error.retryable or error.code == "storage_conflict":
                self._retry(timer)  # its handler's write failed (a full disk): fire it again
                return
            if error.code == "resource_not_found":
                log.warning("timer %s of %s/%s dropped: its actor's aggregate is gone",
                            timer.name, timer.kind, timer.actor_id)  # fmt: skip
            else:  # the actor decided: firing it again would be refused the same way
                log.warning("timer %s of %s/%s refused: %s", timer.name, timer.kind,
                            timer.actor_id, error)  # fmt: skip
        except AskTimedOut:  # in its actor's hands, handled late: delivered
            log.warning("timer %s of %s/%s still being handled", timer.name, timer.kind,
                        timer.actor_id)  # fmt: skip
        except Exception:
            self._retry(timer)
            return
        try:
            await self._store.write(lambda conn: _delete_fired(conn, timer))
        except MaiaError:  # storage stopping: the row stays, and fires again after a restart
            log.warning("fired timer %s of %s/%s not deleted", timer.name, timer.kind,
                        timer.actor_id, exc_info=True)  # fmt: skip

    def _retry(self, timer: TimerRow) -> None:
        log.warning("timer %s of %s/%s not delivered; retrying in %d ms", timer.name,
                    timer.kind, timer.actor_id, RETRY_MS, exc_info=True)  # fmt: skip
        if timer.key not in self._armed:
            self._schedule(timer, self._clock.monotonic_ms() + RETRY_MS)


def _delete_fired(conn: sqlite3.Connection, timer: TimerRow) -> None:
    """Delete the row of a fired timer, unless it was re-armed since (another deadline)."""
    conn.execute(
        "DELETE FROM actor_timers WHERE kind = ? AND actor_id = ? AND name = ?"
        " AND due_wall_ms = ? AND coalesce(subject_revision, -1) = ?",
        (*timer.key, timer.due_wall_ms,
         -1 if timer.subject_revision is None else timer.subject_revision),
    )  # fmt: skip
