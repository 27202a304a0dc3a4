"""s7-review5: a replayed Session write (storage runs its body again after a failing sibling
in its batch) writes a turn's deferred start with its end all the same: every turn's row
has started_ms and finished_ms (start first), its events are queued, dispatching, started
and its end at revisions 1..4, and the stored row is at the last of them (real Session
actor, fake worker, MockClock, real SQLite file)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import orjson
import pytest
import trio.testing

from tests.actors.session.test_replay import _scenario


@pytest.fixture
def jump_clock() -> trio.testing.MockClock:
    """Virtual time that only the test moves: `driven_clock` drives it while quiet."""
    return trio.testing.MockClock()


async def test_a_replayed_end_writes_its_deferred_start(
    tmp_path: Path, jump_clock: trio.testing.MockClock
) -> None:
    """Each end commit ran twice: each turn still has its start (started_ms, turn.started)."""
    await _scenario(tmp_path, replay=True)  # asserts every replayable body ran twice
    with sqlite3.connect(tmp_path / "maia.db") as conn:
        turns = conn.execute(
            "SELECT turn_id, state, revision, started_ms, finished_ms FROM turns ORDER BY seq"
        ).fetchall()
        events = [  # the turn's own revision: the event's aggregateRevision is its Session's
            (body["turnId"], kind, body["turnRevision"])
            for kind, body in (
                (kind, orjson.loads(payload))
                for kind, payload in conn.execute(
                    "SELECT event_type, payload FROM events"
                    " WHERE event_type LIKE 'turn.%' ORDER BY position"
                )
            )
        ]
    assert [t[1] for t in turns] == ["completed", "completed", "failed"]
    for turn_id, state, revision, started_ms, finished_ms in turns:
        mine = [(kind, rev) for turn, kind, rev in events if turn == turn_id]
        assert mine == [("turn.queued", 1), ("turn.dispatching", 2), ("turn.started", 3),
                        (f"turn.{state}", 4)]  # fmt: skip
        assert revision == 4
        assert started_ms is not None
        assert finished_ms is not None
        assert started_ms <= finished_ms
