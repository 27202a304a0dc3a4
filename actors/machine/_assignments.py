"""The machine_assignments and machine_placements tables (migration `_MACHINE_ASSIGNMENTS`).

An assignment is one Project's environment on one Execution Node. Its lease epoch and next
renewal sequence are durable: a Control restart never issues an epoch or a (epoch,
sequence) pair twice. A placement says a Session's worker runs under an assignment.
"""

from __future__ import annotations

import sqlite3
from typing import Final

import attrs

from maia.core import new_id

_COLUMNS: Final = (
    "assignment_id, machine_id, project_id, lease_epoch, next_sequence, phase,"
    " environment_revision, created_ms, updated_ms"
)


@attrs.frozen
class AssignmentRow:
    assignment_id: str
    machine_id: str
    project_id: str
    lease_epoch: int
    next_sequence: int
    phase: str
    environment_revision: int
    created_ms: int
    updated_ms: int


def assignment_for(conn: sqlite3.Connection, machine_id: str, project_id: str,
                   now_ms: int) -> AssignmentRow:  # fmt: skip
    """The assignment of `project_id` on `machine_id`, made (unplaced) on first use."""
    row = conn.execute(f"SELECT {_COLUMNS} FROM machine_assignments WHERE machine_id = ? AND"
                       " project_id = ?", (machine_id, project_id)).fetchone()  # fmt: skip
    if row is not None:
        return AssignmentRow(*row)
    made = AssignmentRow(new_id("assignment"), machine_id, project_id, 0, 1, "unplaced", 1,
                         now_ms, now_ms)  # fmt: skip
    conn.execute(f"INSERT INTO machine_assignments ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?,"
                 " ?)", attrs.astuple(made))  # fmt: skip
    return made


def all_assignments(conn: sqlite3.Connection) -> list[AssignmentRow]:
    rows = conn.execute(f"SELECT {_COLUMNS} FROM machine_assignments ORDER BY created_ms")
    return [AssignmentRow(*row) for row in rows]


def save_lease(conn: sqlite3.Connection, assignment_id: str, lease_epoch: int,
               next_sequence: int, phase: str, now_ms: int) -> None:  # fmt: skip
    """Record the epoch and the next sequence before a launch or a grant goes out."""
    conn.execute("UPDATE machine_assignments SET lease_epoch = ?, next_sequence = ?, phase = ?,"
                 " updated_ms = ? WHERE assignment_id = ?",
                 (lease_epoch, next_sequence, phase, now_ms, assignment_id))  # fmt: skip


def place_session(conn: sqlite3.Connection, session_id: str, assignment_id: str,
                  now_ms: int) -> None:  # fmt: skip
    conn.execute("INSERT OR IGNORE INTO machine_placements (session_id, assignment_id,"
                 " created_ms) VALUES (?, ?, ?)", (session_id, assignment_id, now_ms))  # fmt: skip


def placement_of(conn: sqlite3.Connection, session_id: str) -> str | None:
    """The assignment a Session is placed under, or None (it runs here)."""
    row = conn.execute("SELECT assignment_id FROM machine_placements WHERE session_id = ?",
                       (session_id,)).fetchone()  # fmt: skip
    return None if row is None else str(row[0])


def count_placed(conn: sqlite3.Connection, assignment_id: str) -> int:
    return int(conn.execute("SELECT count(*) FROM machine_placements WHERE assignment_id = ?",
                            (assignment_id,)).fetchone()[0])  # fmt: skip
