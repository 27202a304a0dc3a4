"""The diagnostics recorder on real storage and a real hub: drops reported by many batches
of an attempt become one gap event with their sum, each attempt its own; a batch's records
reach a diagnostic subscriber (not an authoritative one) caused by the turn's dispatch the
journal showed; a failing write is counted, never raised into the worker's reader."""

from __future__ import annotations

import sqlite3
from typing import Any

import trio

from maia.observe import ObservationQuery
from storage import Envelope, append_event, event_context, read_events
from supervision.workers import DiagnosticBatch

from .conftest import Served


def _batch(attempt: str, dropped: int, records: int = 0, turn: str | None = "turn_1") -> Any:
    rows = tuple({"turnId": turn, "i": i} for i in range(records))
    return DiagnosticBatch(attempt, "session_1", turn, rows, dropped)


async def _gaps(served: Served) -> list[Any]:
    page = await served.store.read(lambda c: read_events(c, event_types=["worker.diagnostics.gap"]))
    return list(page.events)


async def test_drops_of_many_batches_become_one_gap_per_attempt(served: Served) -> None:
    """Ten batches' drops of one attempt, reported before the recorder writes, are one gap
    event with their sum; another attempt gets its own; no drop, no event."""
    recorder = served.hub.diagnostics
    for _ in range(10):
        recorder.report(_batch("attempt_a", 7))
    recorder.report(_batch("attempt_b", 3))
    recorder.report(_batch("attempt_c", 0, records=2))
    with trio.fail_after(10):
        while True:  # the recorder's task writes soon: bounded by fail_after
            if len(await _gaps(served)) >= 2:
                break
            await trio.sleep(0.02)
    gaps = {e.owner_id: e for e in await _gaps(served)}
    assert set(gaps) == {"attempt_a", "attempt_b"}
    assert gaps["attempt_a"].payload == {"attemptId": "attempt_a", "droppedRecordCount": 70,
                                         "turnId": "turn_1"}  # fmt: skip
    assert gaps["attempt_b"].payload["droppedRecordCount"] == 3
    assert gaps["attempt_a"].owner_type == "attempt"
    assert gaps["attempt_a"].attempt_id == "attempt_a"
    assert gaps["attempt_a"].classification == "operator"
    assert recorder.dropped_recorded == 73
    assert recorder.unrecorded == 0


async def test_records_reach_diagnostic_subscribers_caused_by_the_dispatch(
    served: Served,
) -> None:
    """After the journal showed the turn's dispatch, a batch's records go to a subscriber of
    diagnostics with that dispatch as cause; an authoritative-only subscriber gets none."""

    def dispatch(conn: sqlite3.Connection) -> Any:
        with event_context(Envelope("cmd-9", activation_id="activation_9")):
            return append_event(conn, owner_id="session_1", event_type="turn.dispatching",
                                payload={"turnId": "turn_1"}, now_ms=1,
                                session_id="session_1", project_id="project_1")  # fmt: skip

    dispatched = await served.store.write(dispatch)
    assert await served.hub.wait_delivered(dispatched.position, 10)
    wants = served.hub.subscribe_observations(ObservationQuery(importance=("diagnostic",)))
    authoritative = served.hub.subscribe_observations(
        ObservationQuery(importance=("authoritative",))
    )
    served.hub.diagnostics.report(_batch("attempt_d", 5, records=3))
    got = wants.take(10)
    assert len(got) == 3
    assert not authoritative.take(10)
    items = [entry.diagnostic for entry in got]
    assert all(item is not None for item in items)
    first = items[0]
    assert first is not None
    assert first.dropped_before == 5
    assert first.causation_id == dispatched.event_id
    assert first.correlation_id == "cmd-9"
    assert first.activation_id == "activation_9"
    assert first.project_id == "project_1"
    encoded = got[0].observation(node_id="node_1", epoch=1, include_content=False)
    assert b'"droppedRecordCountBefore":5' in encoded
    assert b'"eventType":"worker.diagnostic"' in encoded


async def test_a_failing_sink_write_is_counted_not_raised(served: Served) -> None:
    """With storage closed under it, a reported drop is counted as unrecorded and report()
    still returns normally."""
    recorder = served.hub.diagnostics
    recorder.store = _Closed()
    recorder.report(_batch("attempt_e", 4))
    with trio.fail_after(10):
        while True:
            if recorder.unrecorded >= 4:
                break
            await trio.sleep(0.01)
    assert recorder.dropped_recorded == 0


class _Closed:
    """A storage whose writes fail the way a closed one does."""

    async def write(self, fn: Any) -> Any:
        from maia.core import MaiaError

        raise MaiaError("unavailable", "storage is unavailable: closed", {"target": "storage"})
