"""s7-review5: a turn's deferred moves (`turn_step(defer=True)`, `end_turn`) in random orders,
with the batch's "send" savepoints rolled back or released around them, leave the row, the
journal events (order, payloads, revisions) and the receipt targets exactly as the same
moves written one UPDATE each do, on a real SQLite file (Hypothesis)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from actors.session._core import end_events
from actors.session._lifecycles import CLIENT, NODE, WORKER, TurnEvent, TurnState
from actors.session._store import Draft, end_turn, flush_columns, turn_step
from maia.core import MaiaError
from storage._schema import migrate
from tests.actors.session._rows import dispatched, seed_running_session, turn_row, turn_updates

NOW = 1_700_000_000_000
END = NOW + 777
_E = TurnEvent
_TERMINAL = {TurnState.COMPLETED, TurnState.FAILED, TurnState.INTERRUPTED}

# One op: a table row ("step", event, defer), the actor's end (`end_turn`, deferring its
# start), or a savepoint around more ops that is rolled back (True) or released (False).
# A step's event is picked among those its state allows (`_ALLOWED`, by its index), so
# nearly every op applies: a start, interrupts, an end.
_step = st.tuples(st.just("step"), st.integers(0, 4), st.booleans())
_end = st.tuples(st.just("end"), st.sampled_from(["completed", "failed", "interrupted", "lost"]))
_leaf = st.one_of(_step, _step, _step, _end)
_ops = st.lists(
    st.one_of(_leaf, st.tuples(st.just("savepoint"), st.lists(_leaf, max_size=4), st.booleans())),
    max_size=8,
)

_CALLER = {_E.STARTED: WORKER, _E.COMPLETED: WORKER, _E.FAILED: WORKER, _E.INTERRUPTED: WORKER,
           _E.INTERRUPT: CLIENT, _E.RUNTIME_LOST: NODE}  # fmt: skip
_ALLOWED = {  # the start and the interrupt first: an end is one pick in several
    TurnState.DISPATCHING: (_E.STARTED, _E.STARTED, _E.STARTED, _E.STARTED, _E.RUNTIME_LOST),
    TurnState.RUNNING: (
        _E.INTERRUPT,
        _E.INTERRUPT,
        _E.COMPLETED,
        _E.FAILED,
        _E.INTERRUPTED,
        _E.RUNTIME_LOST,
    ),
}
_REASON = {_E.FAILED: "turn_failed", _E.RUNTIME_LOST: "runtime_lost"}


@contextmanager
def _database(path: Path) -> Iterator[sqlite3.Connection]:
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        migrate(conn, path)
        seed_running_session(conn)
        yield conn
    finally:
        conn.close()


def _dispatched(conn: sqlite3.Connection, turn_id: str) -> Draft:
    """Send and dispatch `turn_id` in one write; the draft of the next write (at END)."""
    return dispatched(conn, turn_id, NOW, END, flush=True)


def _apply(conn: sqlite3.Connection, draft: Draft, turn_id: str, ops: list[Any],
           deferred: bool) -> int:  # fmt: skip
    """Apply the ops the table allows (a refused one is skipped, as a refusal rolls back
    its savepoint); the number of `UPDATE turns` statements run."""
    updates = 0
    for op in ops:
        memo = draft.turns.get(turn_id)
        if memo is None:  # ended
            break
        if op[0] == "savepoint":
            saved = draft.snapshot()
            conn.execute("SAVEPOINT send")
            updates += _apply(conn, draft, turn_id, op[1], deferred)
            if op[2]:
                conn.execute("ROLLBACK TO send")
                draft.restore(saved)
            conn.execute("RELEASE send")
        elif op[0] == "end":
            if deferred:
                updates += _counted(conn, lambda o=op[1]: end_turn(conn, draft, turn_id, o))
            else:  # the same rows, one UPDATE each
                for step in end_events(memo.state, op[1]):
                    if draft.turns.get(turn_id) is None:
                        break
                    caller = NODE if step.event is _E.RUNTIME_LOST else WORKER
                    updates += _counted(conn, lambda s=step, c=caller: turn_step(
                        conn, draft, turn_id, s.event, caller=c, reason=s.reason))  # fmt: skip
        else:
            _, pick, defer = op
            allowed = _ALLOWED[memo.state]
            event = allowed[pick % len(allowed)]
            updates += _counted(conn, lambda e=event, d=defer: turn_step(
                conn, draft, turn_id, e, caller=_CALLER[e], reason=_REASON.get(e),
                defer=d and deferred))  # fmt: skip
    return updates


def _counted(conn: sqlite3.Connection, run: Any) -> int:
    return len(turn_updates(conn, run))


def _outcome(conn: sqlite3.Connection, draft: Draft, turn_id: str) -> Any:
    row = turn_row(conn, turn_id)
    events = [
        (kind, revision, {k: v for k, v in orjson.loads(payload).items() if v != turn_id})
        for kind, revision, payload in conn.execute(
            "SELECT event_type, aggregate_revision, payload FROM events WHERE event_id IN"
            f" ({','.join('?' * len(draft.event_ids))}) ORDER BY position",
            draft.event_ids,
        )
    ]
    targets = [(t.disposition, t.prior_revision, t.result_revision) for t in draft.targets]
    memo = draft.turns.get(turn_id)
    return row, events, targets, None if memo is None else (memo.state, memo.revision)


@given(_ops)
def test_deferred_moves_leave_what_one_update_each_leaves(tmp_path_factory: Any,
                                                          ops: list[Any]) -> None:  # fmt: skip
    """Any order of deferred and written moves, savepoints rolled back or not: same row,
    events, targets and memo as one UPDATE per move; never more UPDATEs; nothing unwritten."""
    path = tmp_path_factory.mktemp("orders") / "maia.db"
    with _database(path) as conn:
        results = []
        for deferred in (True, False):
            turn_id = f"turn_{deferred}"
            draft = _dispatched(conn, turn_id)
            conn.execute("BEGIN")
            updates = _apply(conn, draft, turn_id, ops, deferred)
            updates += _counted(conn, lambda d=draft: flush_columns(conn, d))
            conn.execute("COMMIT")
            assert draft.unwritten == {}
            results.append((updates, _outcome(conn, draft, turn_id)))
    (one_updates, one), (each_updates, each) = results
    assert one == each
    assert one_updates <= each_updates
    row = one[0]
    # the spec's invariants on the stored row: a start before its end, an end only if ended
    assert (row[2] is None) == (not any(kind == "turn.started" for kind, _, _ in one[1]))
    assert (row[3] is not None) == (TurnState(row[0]) in _TERMINAL)


def test_a_deferred_start_over_a_row_moved_underneath_conflicts_at_the_flush(
    tmp_path: Path,
) -> None:
    """A start left alone, the row moved by another writer: flush_columns (the transaction's
    end) raises storage_conflict, so the rollback keeps the other writer's row and no event."""
    with _database(tmp_path / "maia.db") as conn:
        draft = _dispatched(conn, "turn_c")
        conn.execute("BEGIN")
        turn_step(conn, draft, "turn_c", TurnEvent.STARTED, caller=WORKER, defer=True)
        conn.execute("UPDATE turns SET revision = revision + 1 WHERE turn_id = 'turn_c'")
        with pytest.raises(MaiaError) as conflict:
            flush_columns(conn, draft)
        conn.execute("ROLLBACK")
        row = conn.execute("SELECT state, revision, started_ms FROM turns").fetchone()
        kinds = [k for (k,) in conn.execute("SELECT event_type FROM events ORDER BY position")]
    assert conflict.value.code == "storage_conflict"
    assert row == ("dispatching", 2, None)
    assert kinds == ["turn.queued", "turn.dispatching"]
