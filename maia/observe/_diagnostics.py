"""Workers' diagnostics on the Node: live on the observation stream, drops in the journal.

A worker coalesces its diagnostics into observation-batch frames from one bounded queue
(2,048 records or 8 MiB); when the queue is full it drops records and reports the count in
its next batch (spec: Worker protocol). The worker supervisor hands every batch to
`DiagnosticsRecorder.report`, which never blocks: the records go to the hub as `diagnostic`
observation records (never stored), and a reported drop becomes an **authoritative gap
event** in the journal, `worker.diagnostics.gap`, owned by the attempt, with the dropped
count, caused by the turn's dispatch when one runs. Drops are summed per attempt until the
recorder's task writes them (one transaction for all pending attempts), so a flood of
batches costs a few writes, and the pending table is bounded.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import sqlite3
from collections.abc import AsyncIterator, Callable
from typing import Any, Final

import attrs
import trio

from maia.core import Clock, MaiaError
from storage import Storage, append_event
from supervision.workers import DiagnosticBatch

from ._buffer import DEFAULT_CAPACITY
from ._hub import Dispatch, ObservationHub
from ._shape import DIAGNOSTICS_GAP_EVENT

log = logging.getLogger("maia.observe")
MAX_PENDING_ATTEMPTS: Final = 4096
FLUSH_BOUND_S: Final = 5.0  # the last write when the Node stops


@attrs.define
class _Drop:
    attempt_id: str
    session_id: str | None
    turn_id: str | None
    dispatch: Dispatch | None
    count: int = 0


class DiagnosticsRecorder:
    """The workers' `DiagnosticsSink`: see the module."""

    def __init__(self, hub: ObservationHub, store: Storage, clock: Clock) -> None:
        self.hub = hub
        self.store = store
        self.clock = clock
        self.gaps_recorded = 0  # gap events written
        self.dropped_recorded = 0  # the records they account for
        self.unrecorded = 0  # dropped records no gap event could name (table full, write failed)
        self._pending: dict[str, _Drop] = {}
        self._wake = trio.Event()

    def report(self, batch: DiagnosticBatch) -> None:
        """Publish `batch`'s records; remember its drop for the journal. Never blocks."""
        self.hub.publish_diagnostics(batch)
        if batch.dropped <= 0:
            return
        drop = self._pending.get(batch.attempt_id)
        if drop is None:
            if len(self._pending) >= MAX_PENDING_ATTEMPTS:
                self.unrecorded += batch.dropped
                return
            dispatch = self.hub.dispatch_of(batch.session_id, batch.turn_id)
            drop = _Drop(batch.attempt_id, batch.session_id, batch.turn_id, dispatch)
            self._pending[batch.attempt_id] = drop
        drop.count += batch.dropped
        self._wake.set()

    async def run(self) -> None:
        """Write pending drops as they come, until cancelled."""
        while True:
            await self._wake.wait()
            self._wake = trio.Event()
            await self.flush()

    async def flush(self) -> None:
        """Write every pending drop now (one transaction)."""
        drops, self._pending = list(self._pending.values()), {}
        if not drops:
            return
        write = functools.partial(_record, drops=drops, now_ms=self.clock.wall_ms())
        try:
            await self.store.write(write)
        except (MaiaError, sqlite3.Error) as error:
            lost = sum(d.count for d in drops)
            self.unrecorded += lost
            log.error("diagnostics gap of %d records not recorded: %r", lost, error)
            return
        self.gaps_recorded += len(drops)
        self.dropped_recorded += sum(d.count for d in drops)


def _record(conn: sqlite3.Connection, *, drops: list[_Drop], now_ms: int) -> None:
    for drop in drops:
        project = None
        if drop.session_id is not None:
            row = conn.execute(
                "SELECT project_id FROM sessions WHERE session_id = ?", (drop.session_id,)
            ).fetchone()
            project = row[0] if row is not None else None
        dispatch = drop.dispatch
        payload: dict[str, Any] = {"attemptId": drop.attempt_id, "droppedRecordCount": drop.count}
        if drop.turn_id is not None:
            payload["turnId"] = drop.turn_id
        append_event(
            conn, owner_id=drop.attempt_id, owner_type="attempt",
            event_type=DIAGNOSTICS_GAP_EVENT, payload=payload, now_ms=now_ms,
            project_id=project, session_id=drop.session_id, attempt_id=drop.attempt_id,
            causation_id=dispatch.event_id if dispatch else None,
            correlation_id=dispatch.correlation_id if dispatch else None,
            activation_id=dispatch.activation_id if dispatch else None,
        )  # fmt: skip


@contextlib.asynccontextmanager
async def run_recorder(
    hub: ObservationHub, store: Storage, clock: Clock
) -> AsyncIterator[DiagnosticsRecorder]:
    """A recorder for the block; what is pending at its end is written (bounded)."""
    recorder = DiagnosticsRecorder(hub, store, clock)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(recorder.run)
        try:
            yield recorder
        finally:
            with trio.move_on_after(FLUSH_BOUND_S) as scope:
                scope.shield = True
                await recorder.flush()
            nursery.cancel_scope.cancel()


@contextlib.asynccontextmanager
async def open_hub(
    store: Storage,
    clock: Clock,
    *,
    buffer_capacity: int = DEFAULT_CAPACITY,
    journal_types: Callable[[], frozenset[str]] | None = None,
) -> AsyncIterator[ObservationHub]:
    """Run a hub on `store` for the block: it listens to commits from entry to exit, and
    its `diagnostics` recorder takes the workers' observation-batches. `journal_types`
    lists the journal's event types, which a query's `eventTypes` is checked against."""
    hub = ObservationHub(store, clock, buffer_capacity=buffer_capacity,
                         journal_types=journal_types)  # fmt: skip
    remove = store.add_commit_listener(hub.on_commit)
    try:
        head = await store.read(
            lambda conn: conn.execute("SELECT coalesce(max(position), 0) FROM events").fetchone()[0]
        )
        hub.delivered_position = max(hub.delivered_position, int(head))
        async with run_recorder(hub, store, clock) as recorder:
            hub.diagnostics = recorder
            yield hub
    finally:
        remove()
