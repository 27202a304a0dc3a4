"""The routine tables (storage migration `_ROUTINES`) and every query the kind runs.

All functions take an open connection: they run inside a `Storage.write` fn (one
transaction with the state, its event and its receipt) or a `Storage.read` fn. A claim is
`claim_routine`: it moves `next_fire_ms` only if the routine is still active at the slot it
was judged against, so a twin claimer finds nothing to claim and the unique slot index
refuses a second row; the claim and the fire rows commit together or not at all.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Iterable, Sequence
from typing import Any, Final

import attrs

from maia.core import Clock, MaiaError
from storage import consume_preview

from ._model import Core, Fire, Trigger
from ._schedule import Schedule
from ._table import FireState, RoutineState

MAX_LIVE_ROUTINES_PER_PROJECT: Final = 20
SHOWN_FIRES: Final = 20
TERMINAL_TURN_STATES: Final = ("completed", "failed", "interrupted")
DONE_SESSION_STATES: Final = ("stopped", "stopping", "failed")

ROUTINE_COLUMNS: Final = (
    "routine_id, project_id, name, cron, timezone, prompt, executor, state, revision,"
    " next_fire_ms, actor_id, created_ms, updated_ms"
)
FIRE_COLUMNS: Final = (
    "fire_id, routine_id, trigger_kind, scheduled_ms, state, reason, claimed_ms, session_id,"
    " turn_id, created_ms, updated_ms"
)


@attrs.frozen
class RoutineRow:
    routine_id: str
    project_id: str
    name: str
    cron: str
    timezone: str
    prompt: str
    executor: str
    state: RoutineState
    revision: int
    next_fire_ms: int | None
    actor_id: str
    created_ms: int
    updated_ms: int

    @classmethod
    def from_row(cls, row: Sequence[Any]) -> RoutineRow:
        values = list(row)
        values[7] = RoutineState(values[7])
        return cls(*values)


@attrs.frozen
class FireRow:
    fire_id: str
    routine_id: str
    trigger: Trigger
    scheduled_ms: int
    state: FireState
    reason: str | None
    claimed_ms: int | None
    session_id: str | None
    turn_id: str | None
    created_ms: int
    updated_ms: int

    @classmethod
    def from_row(cls, row: Sequence[Any]) -> FireRow:
        values = list(row)
        values[2], values[4] = Trigger(values[2]), FireState(values[4])
        return cls(*values)

    def to_fire(self) -> Fire:
        return Fire(self.fire_id, self.trigger, self.scheduled_ms, self.state, self.claimed_ms,
                    self.reason, self.session_id, self.turn_id)  # fmt: skip


def routine_not_found(routine_id: str) -> MaiaError:
    return MaiaError(
        "resource_not_found",
        f"routine {routine_id} does not exist",
        {"resource": "routine", "id": routine_id},
    )


def get_routine(conn: sqlite3.Connection, routine_id: str) -> RoutineRow | None:
    row = conn.execute(
        f"SELECT {ROUTINE_COLUMNS} FROM routines WHERE routine_id = ?", (routine_id,)
    ).fetchone()
    return None if row is None else RoutineRow.from_row(row)


def require_routine(conn: sqlite3.Connection, routine_id: str) -> RoutineRow:
    """The routine. Raises `resource_not_found`."""
    found = get_routine(conn, routine_id)
    if found is None:
        raise routine_not_found(routine_id)
    return found


def insert_routine(conn: sqlite3.Connection, row: RoutineRow) -> None:
    values = attrs.astuple(row, recurse=False)
    conn.execute(
        f"INSERT INTO routines ({ROUTINE_COLUMNS}) VALUES ({', '.join('?' * len(values))})",
        (*values[:7], row.state.value, *values[8:]),
    )


def live_routines_in_project(conn: sqlite3.Connection, project_id: str) -> int:
    """Active or paused routines of a Project (the limit counts these)."""
    row = conn.execute(
        "SELECT count(*) FROM routines WHERE project_id = ? AND state IN ('active', 'paused')",
        (project_id,),
    ).fetchone()
    return int(row[0])


def require_room(conn: sqlite3.Connection, project_id: str) -> None:
    """Raises `routine_limit_reached` when the Project has its 20 live routines. Run in the
    write that inserts a routine too, so racing creates never pass the limit together."""
    if live_routines_in_project(conn, project_id) >= MAX_LIVE_ROUTINES_PER_PROJECT:
        raise MaiaError(
            "routine_limit_reached",
            f"Project {project_id} has {MAX_LIVE_ROUTINES_PER_PROJECT} active or paused "
            "routines; disable one first",
            {"projectId": project_id, "limit": MAX_LIVE_ROUTINES_PER_PROJECT},
        )


def set_routine(
    conn: sqlite3.Connection,
    routine_id: str,
    *,
    state: RoutineState,
    revision: int,
    next_fire_ms: int | None,
    now_ms: int,
    expected_revision: int,
    expected_next_fire_ms: int | None = None,
    check_next_fire: bool = False,
) -> None:
    """Compare-and-set a routine's state: it must still be at `expected_revision` (and, for a
    claim, at `expected_next_fire_ms`). Raises `storage_conflict` otherwise."""
    sql = ("UPDATE routines SET state = ?, revision = ?, next_fire_ms = ?, updated_ms = ?"
           " WHERE routine_id = ? AND revision = ?")  # fmt: skip
    args: list[Any] = [state.value, revision, next_fire_ms, now_ms, routine_id, expected_revision]
    if check_next_fire:
        sql += " AND next_fire_ms IS ?"
        args.append(expected_next_fire_ms)
    if conn.execute(sql, args).rowcount != 1:
        raise MaiaError(
            "storage_conflict",
            f"routine {routine_id} changed since it was read",
            {"routineId": routine_id, "expected": expected_revision},
        )


def write_fire(conn: sqlite3.Connection, routine_id: str, fire: Fire, now_ms: int) -> None:
    """Insert a fire's row, or move the existing one to the fire's state."""
    conn.execute(
        f"INSERT INTO routine_fires ({FIRE_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
        " ON CONFLICT (fire_id) DO UPDATE SET state = excluded.state, reason = excluded.reason,"
        " claimed_ms = excluded.claimed_ms, session_id = excluded.session_id,"
        " turn_id = excluded.turn_id, updated_ms = excluded.updated_ms",
        (fire.fire_id, routine_id, fire.trigger.value, fire.scheduled_ms, fire.state.value,
         fire.reason, fire.claimed_ms, fire.session_id, fire.turn_id, now_ms, now_ms),
    )  # fmt: skip


def attach_session(conn: sqlite3.Connection, fire_id: str, session_id: str, now_ms: int) -> None:
    conn.execute(
        "UPDATE routine_fires SET session_id = ?, updated_ms = ? WHERE fire_id = ?"
        " AND state = 'launching'",
        (session_id, now_ms, fire_id),
    )


def get_fire(conn: sqlite3.Connection, fire_id: str) -> FireRow | None:
    row = conn.execute(
        f"SELECT {FIRE_COLUMNS} FROM routine_fires WHERE fire_id = ?", (fire_id,)
    ).fetchone()
    return None if row is None else FireRow.from_row(row)


def unsettled_fires(conn: sqlite3.Connection, routine_id: str) -> list[FireRow]:
    """Launching fires, and started fires whose first turn has not finished."""
    marks = ", ".join("?" * len(TERMINAL_TURN_STATES))
    rows = conn.execute(
        f"SELECT {', '.join('f.' + c.strip() for c in FIRE_COLUMNS.split(','))}"
        " FROM routine_fires f LEFT JOIN turns t ON t.turn_id = f.turn_id"
        " WHERE f.routine_id = ? AND (f.state = 'launching'"
        f" OR (f.state = 'started' AND (t.state IS NULL OR t.state NOT IN ({marks}))))"
        " ORDER BY f.scheduled_ms",
        (routine_id, *TERMINAL_TURN_STATES),
    ).fetchall()
    return [FireRow.from_row(r) for r in rows]


def load_core(conn: sqlite3.Connection, routine_id: str) -> tuple[RoutineRow, Core]:
    """A routine and its pure core as storage holds them. Raises `resource_not_found`."""
    row = require_routine(conn, routine_id)
    fires = tuple(f.to_fire() for f in unsettled_fires(conn, routine_id))
    schedule = Schedule.parse(row.cron, row.timezone)
    core = Core(row.routine_id, row.state, row.revision, schedule, row.next_fire_ms, fires)
    return row, core


def launching_fires(conn: sqlite3.Connection) -> list[FireRow]:
    rows = conn.execute(
        f"SELECT {FIRE_COLUMNS} FROM routine_fires WHERE state = 'launching'"
        " ORDER BY claimed_ms, fire_id"
    ).fetchall()
    return [FireRow.from_row(r) for r in rows]


def launching_projects(conn: sqlite3.Connection) -> dict[str, str]:
    """routine -> Project, for each routine with a launching fire (maxPendingRoutineTicks)."""
    rows = conn.execute(
        "SELECT DISTINCT r.routine_id, r.project_id FROM routines r"
        " JOIN routine_fires f ON f.routine_id = r.routine_id WHERE f.state = 'launching'"
    ).fetchall()
    return {str(r[0]): str(r[1]) for r in rows}


def scheduler_send_receipts(
    conn: sqlite3.Connection, fires: Iterable[FireRow], actor_of: Any, command_of: Any
) -> dict[str, str]:
    """For each launching fire with an attached Session: the turn its scheduler's turn.send
    receipt names on that Session, if that receipt exists (the crash-recovery evidence)."""
    found: dict[str, str] = {}
    for fire in fires:
        if fire.session_id is None:
            continue
        row = conn.execute(
            "SELECT json_extract(result, '$.turn.turnId'), json_extract(result,"
            " '$.turn.sessionId') FROM receipts WHERE actor_id = ? AND command_id = ?"
            " AND operation_id = 'turn.send'",
            (actor_of(fire.routine_id), command_of(fire.fire_id)),
        ).fetchone()
        if row is not None and row[0] is not None and row[1] == fire.session_id:
            found[fire.fire_id] = str(row[0])
    return found


def started_unsettled(conn: sqlite3.Connection, since_ms: int) -> bool:
    """Whether a fire started since `since_ms` still has a running turn or a live Session
    (the scheduler ticks often until it can stop that Session)."""
    row = conn.execute(
        "SELECT 1 FROM routine_fires f JOIN turns t ON t.turn_id = f.turn_id"
        " JOIN sessions s ON s.session_id = f.session_id WHERE f.state = 'started'"
        " AND (t.state NOT IN ('completed', 'failed', 'interrupted')"
        " OR s.state NOT IN ('stopped', 'stopping', 'failed')) AND f.updated_ms >= ? LIMIT 1",
        (since_ms,),
    ).fetchone()
    return row is not None


def stoppable_sessions(conn: sqlite3.Connection, limit: int) -> list[tuple[str, str, int]]:
    """(routine, Session, revision) of settled fires whose live Session ran only the fire's
    own turn and it finished, or, for a failed fire (its turn never sent: refused, expired
    or outcome_unknown), ran no turn at all: the tick stops these at the revision read
    here."""
    done = ", ".join("?" * len(DONE_SESSION_STATES))
    rows = conn.execute(
        "SELECT f.routine_id, s.session_id, s.revision FROM routine_fires f"
        " JOIN sessions s ON s.session_id = f.session_id"
        " JOIN turns t ON t.turn_id = f.turn_id"
        f" WHERE f.state = 'started' AND s.state NOT IN ({done})"
        " AND t.state IN ('completed', 'failed', 'interrupted')"
        " AND NOT EXISTS (SELECT 1 FROM turns o WHERE o.session_id = s.session_id"
        " AND o.turn_id != f.turn_id)"
        " UNION ALL SELECT f.routine_id, s.session_id, s.revision FROM routine_fires f"
        " JOIN sessions s ON s.session_id = f.session_id"
        f" WHERE f.state = 'failed' AND s.state NOT IN ({done})"
        " AND NOT EXISTS (SELECT 1 FROM turns o WHERE o.session_id = s.session_id) LIMIT ?",
        (*DONE_SESSION_STATES, *DONE_SESSION_STATES, limit),
    ).fetchall()
    return [(str(r[0]), str(r[1]), int(r[2])) for r in rows]


def newest_fires(conn: sqlite3.Connection, routine_id: str) -> list[tuple[FireRow, Any]]:
    """The newest 20 fires, each with its first turn's state and failure reason (or None)."""
    rows = conn.execute(
        f"SELECT {', '.join('f.' + c.strip() for c in FIRE_COLUMNS.split(','))},"
        " t.state, t.failure_reason FROM routine_fires f"
        " LEFT JOIN turns t ON t.turn_id = f.turn_id WHERE f.routine_id = ?"
        " ORDER BY f.scheduled_ms DESC, f.fire_id DESC LIMIT ?",
        (routine_id, SHOWN_FIRES),
    ).fetchall()
    return [(FireRow.from_row(r[:11]), (r[11], r[12])) for r in rows]


def list_routines(
    conn: sqlite3.Connection,
    *,
    project_id: str | None,
    states: Sequence[str],
    after: int | None,
    limit: int,
) -> list[tuple[int, RoutineRow]]:
    """(rowid, routine) in creation order, filtered; `after` is the previous page's last."""
    where: list[str] = ["1 = 1"]
    args: list[Any] = []
    if project_id is not None:
        where.append("project_id = ?")
        args.append(project_id)
    if states:
        where.append(f"state IN ({', '.join('?' * len(states))})")
        args.extend(states)
    if after is not None:
        where.append("rowid > ?")
        args.append(after)
    rows = conn.execute(
        f"SELECT rowid, {ROUTINE_COLUMNS} FROM routines WHERE {' AND '.join(where)}"
        " ORDER BY rowid LIMIT ?",
        (*args, limit),
    ).fetchall()
    return [(int(r[0]), RoutineRow.from_row(r[1:])) for r in rows]


def spend_proof(
    conn: sqlite3.Connection,
    *,
    proof: str,
    actor_id: str,
    operation_id: str,
    input_digest: str,
    command_id: str,
    clock: Clock,
    node_epoch: int,
) -> None:
    """Spend a routine preview's proof and delete it (the spec: the Node deletes the proof on
    confirmation). Raises `storage_conflict` for an unknown, spent, expired or other-value
    proof, so a refused confirm changes nothing and keeps its proof (the write rolls back)."""
    digest = hashlib.sha256(proof.encode()).hexdigest()
    row = conn.execute("SELECT preview_id FROM previews WHERE proof_hash = ?", (digest,)).fetchone()
    try:
        if row is None:
            raise MaiaError("preview_mismatch", "no preview with that proof")
        consume_preview(conn, preview_id=row[0], proof=proof, actor_id=actor_id,
                        operation_id=operation_id, input_digest=input_digest,
                        command_id=command_id, clock=clock, node_epoch=node_epoch)  # fmt: skip
    except MaiaError as error:
        raise MaiaError(
            "storage_conflict",
            f"{operation_id}: the preview is unknown, spent, expired or for other values "
            f"({error.code}); preview again",
            {"operationId": operation_id, "reason": error.code},
        ) from None
    conn.execute("DELETE FROM previews WHERE preview_id = ?", (row[0],))


def routines_with_unclaimed_runs(conn: Any) -> list[str]:
    rows = conn.execute(
        "SELECT DISTINCT routine_id FROM routine_fires WHERE state = 'launching'"
        " AND claimed_ms IS NULL"
    ).fetchall()
    return [str(r[0]) for r in rows]


def routines_with_claims(conn: Any) -> list[str]:
    rows = conn.execute(
        "SELECT DISTINCT routine_id FROM routine_fires WHERE state = 'launching'"
        " AND claimed_ms IS NOT NULL"
    ).fetchall()
    return [str(r[0]) for r in rows]
