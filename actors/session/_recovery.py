"""What a Node does with its Sessions when it starts (spec: Lifecycle baseline, recovery).

In one transaction, before any request is served:
  * a Session that had a worker goes to `recovering` (one that was `stopping` to `stopped`:
    its worker died with the old Node);
  * a turn that was dispatching or running fails `runtime_lost`: its outcome is unknown, so
    it is never re-run;
  * a Session left recovering with nothing queued becomes `idle`;
  * every attempt the old Node left open is closed (`node_restarted`).
Before that, leftover workers of the old Node are found by their attempt rows and killed.
Sessions with queued turns are then resumed through the registry (each gets a new attempt
and dispatches in send order); idle Sessions are not loaded at all: they rehydrate on their
next message.
"""

from __future__ import annotations

import sqlite3

import attrs
import trio

from storage import Storage

from ._approvals import withdraw_pending
from ._launch import kill_leftovers, open_attempts
from ._lifecycles import SessionEvent, SessionState, TurnEvent, TurnState
from ._store import LIVE_SESSION_STATES, Draft, TurnMemo, session_step, set_activity, turn_step


@attrs.frozen
class RecoveryReport:
    sessions_recovered: int
    turns_lost: int
    workers_killed: int
    resumable: tuple[str, ...]  # Sessions with queued turns


def _recover_rows(conn: sqlite3.Connection, now: int) -> tuple[int, int, tuple[str, ...]]:
    marks = ", ".join("?" * len(LIVE_SESSION_STATES))
    sessions = conn.execute(
        f"SELECT session_id, project_id, state, revision, activity FROM sessions"
        f" WHERE state IN ({marks})",
        LIVE_SESSION_STATES,
    ).fetchall()
    dispatched = conn.execute(
        "SELECT turn_id, session_id, state, revision, text FROM turns"
        " WHERE state IN ('dispatching', 'running')"
    ).fetchall()
    by_session: dict[str, list[TurnMemo]] = {}
    for turn_id, session_id, state, revision, text in dispatched:
        by_session.setdefault(session_id, []).append(
            TurnMemo(turn_id, TurnState(state), revision, text)
        )
    queued = {
        row[0]
        for row in conn.execute("SELECT DISTINCT session_id FROM turns WHERE state = 'queued'")
    }
    known = {row[0] for row in sessions}
    extra = [s for s in by_session if s not in known]
    if extra:
        sessions += conn.execute(
            f"SELECT session_id, project_id, state, revision, activity FROM sessions"
            f" WHERE session_id IN ({', '.join('?' * len(extra))})",
            extra,
        ).fetchall()
    lost = 0
    for session_id, project_id, state, revision, activity in sessions:
        turns = {m.turn_id: m for m in by_session.get(session_id, [])}
        draft = Draft(session_id, project_id, SessionState(state), revision, activity, turns, now)
        # Its worker died with the Node: a pending approval can never reach the harness.
        withdraw_pending(conn, draft, "the worker is gone: the Node restarted")
        if draft.state in (SessionState.STOPPING, *_HAD_WORKER, SessionState.RECOVERING):
            session_step(conn, draft, SessionEvent.NODE_RESTARTED)
        for turn_id in list(turns):
            turn_step(conn, draft, turn_id, TurnEvent.RUNTIME_LOST, reason="runtime_lost")
            lost += 1
        if draft.state is SessionState.RECOVERING and session_id not in queued:
            session_step(conn, draft, SessionEvent.RECOVERED)
        set_activity(conn, draft, "working" if session_id in queued else "stopped")
    conn.execute(
        "UPDATE worker_attempts SET state = 'exited', ended_ms = ?, end_reason = 'node_restarted'"
        " WHERE ended_ms IS NULL",
        (now,),
    )
    resumable = conn.execute(
        "SELECT DISTINCT t.session_id FROM turns t JOIN sessions s USING (session_id)"
        " WHERE t.state = 'queued' AND s.state NOT IN ('stopped', 'failed')"
    ).fetchall()
    return len(sessions), lost, tuple(r[0] for r in resumable)


_HAD_WORKER = (
    SessionState.STARTING,
    SessionState.RUNNING,
    SessionState.WAITING_APPROVAL,
    SessionState.INTERRUPTED,
)


async def recover_sessions(store: Storage, now: int) -> RecoveryReport:
    """Kill the old Node's leftover workers and recover the Sessions' rows (see above)."""
    leftovers = await store.read(lambda conn: open_attempts(conn, store.node_epoch))
    killed = await trio.to_thread.run_sync(kill_leftovers, leftovers) if leftovers else []
    recovered, lost, resumable = await store.write(lambda conn: _recover_rows(conn, now))
    return RecoveryReport(recovered, lost, len(killed), resumable)
