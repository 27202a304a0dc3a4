"""The Session's table steps written with `Tx.move`/`Tx.create` (no `Change` planned) write
what `Tx.apply` of the same one-event change writes: rows, events, receipt targets; and a
queued turn's dispatch view, built from its send's view, is the row read back."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from actors._write import Change, Tx

# The nine names _store.py imports, from the same module: the planned side applies the
# lifecycle tables through Tx.apply itself. An import, not a restatement (the `duplicates`
# tool pairs the two lists).
from actors.session._lifecycles import (
    CLIENT,
    NODE,
    SESSION_TABLE,
    TURN_TABLE,
    WORKER,
    SessionEvent,
    SessionState,
    TurnEvent,
    TurnState,
)
from actors.session._sql import SESSION_LIFE_ROWS
from actors.session._sql_turns import TURN_ROWS, TurnRecord
from actors.session._store import Draft, insert_turn, session_step, turn_step
from actors.session._views import new_turn_view, turn_view
from maia.core import MaiaError
from maia.protocol import SystemClock
from storage import open_storage

_EVENT_COLUMNS = ("event_type, owner_type, owner_id, owner_seq, aggregate_revision, project_id,"
                  " session_id, actor_id, payload")  # fmt: skip
NOW = 1_700_000_000_000


def _seed(conn: sqlite3.Connection) -> None:
    conn.execute(
        "INSERT INTO projects (project_id, project_key, root, revision, created_ms, updated_ms)"
        " VALUES ('project_t', 'tests', '/tmp', 1, 0, 0)"
    )
    for session_id in ("session_a", "session_b"):
        conn.execute(
            "INSERT INTO sessions (session_id, project_id, executor, cwd, state, activity,"
            " created_ms, updated_ms, revision) VALUES (?, 'project_t', 'builtin:echo', '/tmp',"
            " 'idle', 'idle', 0, 0, 1)",
            (session_id,),
        )


def _draft(conn: sqlite3.Connection, session_id: str) -> Draft:
    tx = Tx(conn, "session", session_id, NOW, 0, 1)
    return Draft(session_id, "project_t", SessionState.IDLE, 1, "idle", {}, NOW).bind(tx)


def _lean(conn: sqlite3.Connection) -> tuple[Draft, list[Any]]:
    """A turn's life through the Session's own steps (the lean writes)."""
    draft = _draft(conn, "session_a")
    draft.next_seq = 1
    insert_turn(conn, draft, "turn_a", "hi")
    session_step(conn, draft, SessionEvent.ACTIVATE)
    turn_step(conn, draft, "turn_a", TurnEvent.DISPATCH, payload={"userSnapshotId": "s1"})
    turn_step(conn, draft, "turn_a", TurnEvent.STARTED, caller=WORKER)
    turn_step(conn, draft, "turn_a", TurnEvent.FAILED, caller=WORKER, reason="turn_failed")
    return draft, list(draft.targets)


def _planned(conn: sqlite3.Connection) -> tuple[Draft, list[Any]]:
    """The same life as `Tx.apply` of one-event changes (the generic write path)."""
    draft = _draft(conn, "session_b")
    tx = draft._tx
    queued = TurnRecord("turn_b", "session_b", "project_t", TurnState.QUEUED, 0, "hi", 1)
    turn = tx.apply(Change(TURN_ROWS, TURN_TABLE, None, queued, (TurnEvent.SEND,), CLIENT,
                           timer=False, owner_revision=draft.revision))  # fmt: skip
    life = draft.life()
    life = tx.apply(Change(SESSION_LIFE_ROWS, SESSION_TABLE, life, life,
                           (SessionEvent.ACTIVATE,), NODE, receipt=False, timer=False))  # fmt: skip
    moves: list[tuple[TurnEvent, str, dict[str, Any], str | None]] = [
        (TurnEvent.DISPATCH, NODE, {"userSnapshotId": "s1"}, None),
        (TurnEvent.STARTED, WORKER, {}, None),
        (TurnEvent.FAILED, WORKER, {"reason": "turn_failed"}, "turn_failed"),
    ]
    for event, caller, payload, reason in moves:
        new = TurnRecord("turn_b", "session_b", "project_t", turn.state, turn.revision,
                         reason=reason)  # fmt: skip
        turn = tx.apply(Change(TURN_ROWS, TURN_TABLE, new, new, (event,), caller,
                               payload=payload, timer=False,
                               owner_revision=life.revision))  # fmt: skip
    return draft, list(tx.targets)


def _rows(conn: sqlite3.Connection, session_id: str, turn_id: str) -> Any:
    events = conn.execute(f"SELECT {_EVENT_COLUMNS} FROM events WHERE owner_id = ?"
                          " ORDER BY position", (session_id,)).fetchall()  # fmt: skip
    turn = conn.execute("SELECT state, revision, started_ms, finished_ms, failure_reason, seq"
                        " FROM turns WHERE turn_id = ?", (turn_id,)).fetchone()  # fmt: skip
    session = conn.execute("SELECT state, revision, activity FROM sessions WHERE session_id = ?",
                           (session_id,)).fetchone()  # fmt: skip
    return events, turn, session


def _normal(value: Any, session_id: str, turn_id: str) -> str:
    return repr(value).replace(session_id, "S").replace(turn_id, "T")


async def test_lean_steps_write_what_the_planned_changes_write(tmp_path: Path) -> None:
    """Same turn and Session rows, the same events in order, the same receipt targets."""
    async with open_storage(tmp_path / "maia.db", clock=SystemClock()) as store:
        await store.write(_seed)
        lean, lean_targets = await store.write(_lean)
        _, planned_targets = await store.write(_planned)
        lean_rows = await store.read(lambda c: _rows(c, "session_a", "turn_a"))
        planned_rows = await store.read(lambda c: _rows(c, "session_b", "turn_b"))
    assert len(lean_rows[0]) == 5  # queued, running, dispatching, started, failed
    assert _normal(lean_rows, "session_a", "turn_a") == _normal(planned_rows, "session_b",
                                                                "turn_b")  # fmt: skip
    assert len(lean_targets) == 1  # the send's: the turn created
    assert [_normal(t, "session_a", "turn_a") for t in lean_targets] == [
        _normal(t, "session_b", "turn_b") for t in planned_targets
    ]
    assert (lean.state, lean.revision) == (SessionState.RUNNING, 2)
    assert "turn_a" not in lean.turns
    assert lean.ended == {"turn_a": "hi"}


def _refused(conn: sqlite3.Connection) -> tuple[str, str, int]:
    draft = _draft(conn, "session_a")
    draft.next_seq = 1
    insert_turn(conn, draft, "turn_r", "hi")
    written = len(draft.event_ids)
    with pytest.raises(MaiaError) as refused:
        turn_step(conn, draft, "turn_r", TurnEvent.COMPLETED, caller=WORKER)  # queued: no row
    with pytest.raises(MaiaError) as denied:
        turn_step(conn, draft, "turn_r", TurnEvent.DISPATCH, caller=WORKER)  # node's row
    assert len(draft.event_ids) == written
    state = conn.execute("SELECT state FROM turns WHERE turn_id = 'turn_r'").fetchone()[0]
    return refused.value.code, denied.value.code, state == "queued"


async def test_a_refused_lean_step_writes_nothing(tmp_path: Path) -> None:
    """The table's refusals (no row; a caller the row does not allow) come before any write."""
    async with open_storage(tmp_path / "maia.db", clock=SystemClock()) as store:
        await store.write(_seed)
        assert await store.write(_refused) == ("invalid_state", "role_denied", True)


def _dispatch_view(conn: sqlite3.Connection) -> tuple[Any, Any]:
    draft = _draft(conn, "session_a")
    draft.next_seq = 1
    insert_turn(conn, draft, "turn_v", "é" * 100)
    memo = draft.turns["turn_v"]
    memo.view = new_turn_view("turn_v", "session_a", "queued", 1, NOW, "é" * 100)
    turn_step(conn, draft, "turn_v", TurnEvent.DISPATCH)
    return draft.views["turn_v"], turn_view(conn, "turn_v")


async def test_a_dispatch_view_from_the_send_view_is_the_row_read_back(tmp_path: Path) -> None:
    """Dispatched from the queue, the view built from memory equals turn_view's read."""
    async with open_storage(tmp_path / "maia.db", clock=SystemClock()) as store:
        await store.write(_seed)
        built, read = await store.write(_dispatch_view)
    assert built.state == "dispatching"
    assert built == read


def _copy_on_write(conn: sqlite3.Connection) -> tuple[Any, ...]:
    memory = _draft(conn, "session_a")
    memory.next_seq = 1
    insert_turn(conn, memory, "turn_c", "hi")
    insert_turn(conn, memory, "turn_d", "ho")
    memory.tx = None  # as adopted after its commit
    draft = memory.copy(NOW + 1).bind(Tx(conn, "session", "session_a", NOW + 1, 0, 1))
    shared = draft.turns["turn_d"] is memory.turns["turn_d"]  # untouched: not copied
    turn_step(conn, draft, "turn_c", TurnEvent.DISPATCH)
    saved = draft.snapshot()
    turn_step(conn, draft, "turn_c", TurnEvent.STARTED, caller=WORKER)
    after_start = draft.turns["turn_c"].state
    draft.restore(saved)  # a savepoint rolled back: the draft as it was before the start
    return (shared, memory.turns["turn_c"].state, memory.turns["turn_c"].revision,
            after_start, draft.turns["turn_c"].state, draft.turns["turn_c"].revision)  # fmt: skip


async def test_a_draft_changes_copies_of_the_memos_it_moves(tmp_path: Path) -> None:
    """Copy on write: the memory a draft came from keeps its memos as they were (a failed
    or replayed run leaves it so); a memo the draft does not move is shared; a snapshot's
    restore brings back the draft's memo as it was."""
    async with open_storage(tmp_path / "maia.db", clock=SystemClock()) as store:
        await store.write(_seed)
        found = await store.write(_copy_on_write)
    assert found == (True, TurnState.QUEUED, 1, TurnState.RUNNING, TurnState.DISPATCHING, 2)
