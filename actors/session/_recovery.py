"""What a Node does with its Sessions when it starts (spec: Lifecycle baseline, recovery).

In one transaction, before any request is served, driven by the tables' recovery column
(`SESSION_TABLE.recovery_targets`, `recover_with`; the SQL is `_sql`'s):
  * a Session that had a worker goes to `recovering` (one that was `stopping` to `stopped`:
    its worker died with the old Node);
  * a turn that was dispatching or running fails `runtime_lost`: its outcome is unknown, so
    it is never re-run;
  * a Session left recovering with nothing queued becomes `idle`; an `idle` Session whose
    worker was warm stays `idle` (no activation held its lease) with activity `stopped`;
  * every attempt the old Node left open is closed (`node_restarted`), except a placed
    Session's: its worker ran on an Execution Node and may still run there, so the attempt
    stays open, and holds any new worker of that Session, until that Node reports it gone
    (`actors.machine._recovered`; spec MN0 item 10).
Before that, leftover workers of the old Node are found by their attempt rows and killed
(a placed attempt's pid is the Execution Node's: never swept here).
Sessions with queued turns are then resumed through the registry (each gets a new attempt
and dispatches in send order); idle Sessions are not loaded at all: they rehydrate on their
next message.
"""

from __future__ import annotations

import enum
import os
import sqlite3
from typing import Any, TypeVar

import attrs
import trio

from actors._table import TransitionTable
from actors._timers import disarm_kind
from actors._write import Tx
from storage import Storage

from . import _sql_recovery as recovery_sql
from ._approvals import withdraw_pending
from ._launch import Leftover, kill_leftovers, open_attempts
from ._lifecycles import SESSION_TABLE, TURN_TABLE, SessionEvent, SessionState, TurnState
from ._store import Draft, TurnMemo, session_step, set_activity, turn_step

E = TypeVar("E", bound=enum.Enum)


@attrs.frozen
class RecoveryReport:
    sessions_recovered: int
    turns_lost: int
    workers_killed: int
    resumable: tuple[str, ...]  # Sessions with queued turns
    timers_dropped: tuple[tuple[str, str], ...] = ()  # (Session, timer name)


def _recover_with(table: TransitionTable[Any, E]) -> E:
    if table.recover_with is None:
        raise TypeError(f"the {table.name} table declares no recover_with event")
    return table.recover_with


def _values(states: frozenset[SessionState] | frozenset[TurnState]) -> tuple[str, ...]:
    return tuple(sorted(state.value for state in states))


_Recovered = tuple[int, int, tuple[str, ...], list[tuple[str, str]]]


def _recover_rows(conn: sqlite3.Connection, now: int, epoch: int, kind: str) -> _Recovered:
    tx = Tx(conn, kind, "", now, 0, epoch)  # the write path's transaction (no timers)
    session_event, turn_event = _recover_with(SESSION_TABLE), _recover_with(TURN_TABLE)
    by_session: dict[str, list[TurnMemo]] = {}
    for turn_id, session_id, state, revision, text in recovery_sql.turns_to_recover(
        conn, _values(TURN_TABLE.recovery_states)
    ):
        by_session.setdefault(session_id, []).append(
            TurnMemo(turn_id, TurnState(state), revision, text)
        )
    queued = recovery_sql.sessions_with_queued_turns(conn)
    # An idle Session whose worker was warm (or starting for a queued turn) lost it too.
    also = (*by_session, *recovery_sql.idle_sessions_with_worker(conn))
    sessions = recovery_sql.sessions_to_recover(conn, _values(SESSION_TABLE.recovery_states), also)
    lost = 0
    for session_id, project_id, state, revision, activity in sessions:
        turns = {m.turn_id: m for m in by_session.get(session_id, [])}
        draft = Draft(session_id, project_id, SessionState(state), revision, activity, turns,
                      now).bind(tx)  # fmt: skip
        # Its worker died with the Node: a pending approval can never reach the harness.
        withdraw_pending(conn, draft, "the worker is gone: the Node restarted")
        if draft.state in SESSION_TABLE.recovery_states:
            session_step(conn, draft, session_event)
        for turn_id in list(turns):
            turn_step(conn, draft, turn_id, turn_event, reason="runtime_lost")
            lost += 1
        # The Session kind's own follow-up: recovering with nothing to resume is idle.
        if draft.state is SessionState.RECOVERING and session_id not in queued:
            session_step(conn, draft, SessionEvent.RECOVERED)
        set_activity(conn, draft, "working" if session_id in queued else "stopped")
    recovery_sql.close_open_attempts(conn, now)
    tx.finish()
    # The old Node's idle releases, wall times and approval expiries bound a worker that is
    # gone (its approvals were withdrawn above): none of them fires.
    dropped = disarm_kind(conn, kind)
    return len(sessions), lost, recovery_sql.resumable_sessions(conn), dropped


async def recover_sessions(store: Storage, now: int, kind: str = "session") -> RecoveryReport:
    """Kill the old Node's leftover workers and recover the Sessions' rows (see above)."""

    def local_leftovers(conn: sqlite3.Connection) -> list[Leftover]:
        placed = recovery_sql.placed_open_attempts(conn)
        return [a for a in open_attempts(conn, store.node_epoch) if a.attempt_id not in placed]

    leftovers = await store.read(local_leftovers)
    scope = os.path.realpath(str(store.path))  # noqa: ASYNC240 - once, as actors/_workers.py
    killed = await trio.to_thread.run_sync(kill_leftovers, leftovers, scope) if leftovers else []
    recovered, lost, resumable, dropped = await store.write(
        lambda conn: _recover_rows(conn, now, store.node_epoch, kind)
    )
    return RecoveryReport(recovered, lost, len(killed), resumable, tuple(dropped))
