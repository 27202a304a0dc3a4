"""A turn's start written with its end: one `UPDATE turns` for both moves (the end commit's),
the same row (state, revision, started_ms, finished_ms), the same events in the same order
with the same payloads and revisions as two UPDATEs wrote; a start left alone is written at
the transaction's end (`flush_columns`); a row moved underneath still conflicts; a real
Session actor's turn moves its row twice (dispatch, end) with its four events."""

from __future__ import annotations

import functools
import itertools
import sqlite3
from pathlib import Path
from typing import Any

import orjson
import pytest
import trio.testing

from actors.session._items import OpenItem, flush_item
from actors.session._lifecycles import WORKER, TurnEvent
from actors.session._store import Draft, end_turn, flush_columns, turn_step
from maia.core import MaiaError
from maia.protocol import SystemClock
from storage import open_storage

from ._harness import open_harness
from ._rows import dispatched, seed_running_session, turn_row, turn_updates

NOW = 1_700_000_000_000
END = NOW + 1234


def _dispatched(conn: sqlite3.Connection, turn_id: str) -> Draft:
    """Send and dispatch a turn in one write; the draft of the next write (at `END`)."""
    return dispatched(conn, turn_id, NOW, END)


def _end(conn: sqlite3.Connection, turn_id: str, *, defer: bool, outcome: str) -> Any:
    """Start the dispatched turn (deferred or not), write its message, end it; the turn
    UPDATEs of that transaction, the row and the turn's events as stored."""
    draft = _dispatched(conn, turn_id)

    def run() -> None:
        turn_step(conn, draft, turn_id, TurnEvent.STARTED, caller=WORKER, defer=defer)
        flush_item(conn, draft, OpenItem(f"item_{turn_id}", turn_id, 1, "message", "hi", True))
        end_turn(conn, draft, turn_id, outcome)
        flush_columns(conn, draft)

    updates = turn_updates(conn, run)
    row = turn_row(conn, turn_id)
    events = [
        (kind, revision, _without_ids(orjson.loads(payload), turn_id))
        for kind, revision, payload in conn.execute(
            # a turn event is the Session's (its aggregateRevision): the turn's rides along
            "SELECT event_type, payload ->> '$.turnRevision', payload FROM events ORDER BY position"
        )
        if turn_id in payload
    ]
    return updates, row, events


def _without_ids(payload: dict[str, Any], turn_id: str) -> dict[str, Any]:
    return {k: ("<turn>" if v == turn_id else "<item>" if v == f"item_{turn_id}" else v)
            for k, v in payload.items()}  # fmt: skip


@pytest.mark.parametrize("outcome", ["completed", "failed", "interrupted"])
async def test_a_start_and_its_end_are_one_update_with_both_events(
    tmp_path: Path, outcome: str
) -> None:
    """Deferred: one UPDATE (two before); row and events the same as two UPDATEs wrote."""
    runs = []
    for defer in (True, False):  # the same turn in two databases
        async with open_storage(tmp_path / f"{defer}.db", clock=SystemClock()) as store:
            await store.write(seed_running_session)
            end = functools.partial(_end, turn_id="turn_a", defer=defer, outcome=outcome)
            runs.append(await store.write(end))
    one, two = runs
    (updates_one, row_one, events_one), (updates_two, row_two, events_two) = one, two
    assert len(updates_one) == 1
    assert len(updates_two) == 2
    assert row_one == row_two
    assert row_one[:4] == (outcome, 4, END, END)
    assert events_one == events_two
    kinds = [kind for kind, _, _ in events_one]
    assert kinds == ["turn.queued", "turn.dispatching", "turn.started", "item.completed",
                     f"turn.{outcome}"]  # fmt: skip
    assert [revision for _, revision, _ in events_one] == [1, 2, 3, None, 4]


async def test_an_end_from_dispatching_is_one_update(tmp_path: Path) -> None:
    """No buffered start: end_turn's own start and end are one UPDATE, started_ms set."""

    def run(conn: sqlite3.Connection) -> Any:
        draft = _dispatched(conn, "turn_d")
        updates = turn_updates(conn, lambda: end_turn(conn, draft, "turn_d", "completed"))
        events = [r[0] for r in conn.execute("SELECT event_type FROM events ORDER BY position")]
        row = conn.execute("SELECT state, revision, started_ms, finished_ms FROM turns").fetchone()
        return updates, events, row

    async with open_storage(tmp_path / "maia.db", clock=SystemClock()) as store:
        await store.write(seed_running_session)
        updates, events, row = await store.write(run)
    assert len(updates) == 1
    assert events[-2:] == ["turn.started", "turn.completed"]
    assert row == ("completed", 4, END, END)


async def test_a_start_left_alone_is_written_at_the_end_of_its_transaction(
    tmp_path: Path,
) -> None:
    """A deferred start with no end after it: flush_columns writes it (running, started)."""

    def run(conn: sqlite3.Connection) -> Any:
        draft = _dispatched(conn, "turn_s")
        turn_step(conn, draft, "turn_s", TurnEvent.STARTED, caller=WORKER, defer=True)
        before = conn.execute("SELECT state, revision FROM turns").fetchone()
        flush_columns(conn, draft)
        after = conn.execute("SELECT state, revision, started_ms, finished_ms FROM turns")
        return before, after.fetchone(), draft.unwritten

    async with open_storage(tmp_path / "maia.db", clock=SystemClock()) as store:
        await store.write(seed_running_session)
        before, after, unwritten = await store.write(run)
    assert before == ("dispatching", 2)
    assert after == ("running", 3, END, None)
    assert unwritten == {}


async def test_a_row_moved_underneath_a_deferred_start_conflicts(tmp_path: Path) -> None:
    """The one UPDATE compares the revision as stored before the start: storage_conflict."""

    def run(conn: sqlite3.Connection) -> str:
        draft = _dispatched(conn, "turn_c")
        turn_step(conn, draft, "turn_c", TurnEvent.STARTED, caller=WORKER, defer=True)
        conn.execute("UPDATE turns SET revision = revision + 1")  # another writer's move
        try:
            end_turn(conn, draft, "turn_c", "completed")
        except MaiaError as error:
            return error.code
        return "written"

    async with open_storage(tmp_path / "maia.db", clock=SystemClock()) as store:
        await store.write(seed_running_session)
        assert await store.write(run) == "storage_conflict"


@pytest.fixture
def jump_clock() -> trio.testing.MockClock:
    """Virtual time that only the test moves: the harness drives it while quiet."""
    return trio.testing.MockClock()


async def test_a_session_turn_moves_its_row_twice_with_its_four_events(
    tmp_path: Path, jump_clock: trio.testing.MockClock
) -> None:
    """Through the Session actor (fake worker): the dispatch's UPDATE and the end's, which
    writes the start too; turn.queued..turn.completed at revisions 1..4 around the item."""
    traced: list[str] = []
    async with open_harness(tmp_path) as h:
        session_id = await h.session()
        await h.store.write(lambda conn: conn.set_trace_callback(traced.append))
        turn_id = await h.send(session_id, "hello")
        done = await h.wait_turn(turn_id, "completed", "failed")
        await h.store.write(lambda conn: conn.set_trace_callback(None))
        events, row = await h.store.read(lambda c: (
            c.execute("SELECT event_type, payload ->> '$.turnRevision' FROM events"
                      " WHERE payload LIKE ? ORDER BY position", (f"%{turn_id}%",)).fetchall(),
            c.execute("SELECT revision, started_ms IS NOT NULL, finished_ms IS NOT NULL"
                      " FROM turns WHERE turn_id = ?", (turn_id,)).fetchone()))  # fmt: skip
    assert done.state == "completed"
    updates = [t for t, _ in itertools.groupby(traced)
               if t.startswith("UPDATE turns") and turn_id in t]  # fmt: skip
    assert len(updates) == 2
    assert [tuple(e) for e in events] == [("turn.queued", 1), ("turn.dispatching", 2),
                                          ("turn.started", 3), ("item.completed", None),
                                          ("turn.completed", 4)]  # fmt: skip
    assert tuple(row) == (4, 1, 1)
