"""The machine_assignments and machine_placements tables (migrations `_MACHINE_ASSIGNMENTS`,
`_MACHINE_ASSIGNMENT_ACTOR`): the assignment's record, the runtime's `Rows` for it, reads.

An assignment is one Project's environment on one Execution Node. Its lease epoch and next
renewal sequence are durable: a Control restart never issues an epoch or a (epoch,
sequence) pair twice. Its state (column `phase`) and revision move only through its table
(`_assignment_table`), by its actor. A placement says a Session's worker runs under it.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any, Final

import attrs

from actors import Change, EventOwner, Transition, Write
from maia.core import new_id

from ._assignment_table import ASSIGNMENT_TABLE, AssignmentEvent, AssignmentState

_COLUMNS: Final = (
    "assignment_id, machine_id, project_id, lease_epoch, next_sequence, phase,"
    " environment_revision, created_ms, updated_ms, revision, barrier_epoch, barrier_sequence"
)


@attrs.frozen
class AssignmentRow:
    assignment_id: str
    machine_id: str
    project_id: str
    lease_epoch: int
    next_sequence: int
    state: AssignmentState
    environment_revision: int
    created_ms: int
    updated_ms: int
    revision: int = 1
    barrier: tuple[int, int] | None = None  # the newest pair issued before a Control start

    @property
    def id(self) -> str:
        return self.assignment_id

    @property
    def phase(self) -> str:
        return self.state.value

    @classmethod
    def from_row(cls, row: Sequence[Any]) -> AssignmentRow:
        barrier = None if row[10] is None else (int(row[10]), int(row[11]))
        return cls(row[0], row[1], row[2], row[3], row[4], AssignmentState(row[5]), row[6],
                   row[7], row[8], row[9], barrier)  # fmt: skip


class AssignmentRows:
    """The runtime's `Rows` for assignments: insert, compare-and-set update, event owner."""

    resource = "assignment"

    def insert(self, conn: sqlite3.Connection, record: AssignmentRow, now_ms: int) -> None:
        conn.execute(f"INSERT INTO machine_assignments ({_COLUMNS}) VALUES"
                     " (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, NULL)",
                     (record.assignment_id, record.machine_id, record.project_id,
                      record.lease_epoch, record.next_sequence, record.state.value,
                      record.environment_revision, now_ms, now_ms, record.revision))  # fmt: skip

    def update(self, conn: sqlite3.Connection, before: AssignmentRow, after: AssignmentRow,
               now_ms: int) -> bool:  # fmt: skip
        epoch, sequence = after.barrier if after.barrier is not None else (None, None)
        return conn.execute(
            "UPDATE machine_assignments SET lease_epoch = ?, next_sequence = ?, phase = ?,"
            " revision = ?, barrier_epoch = ?, barrier_sequence = ?, updated_ms = ?"
            " WHERE assignment_id = ? AND revision = ?",
            (after.lease_epoch, after.next_sequence, after.state.value, after.revision, epoch,
             sequence, now_ms, after.assignment_id, before.revision),
        ).rowcount == 1  # fmt: skip

    def owner(self, record: AssignmentRow) -> EventOwner:
        return EventOwner(record.assignment_id, "assignment", record.project_id)

    def payload(self, row: Transition[Any, Any], after: AssignmentRow) -> dict[str, Any]:
        return {"assignmentId": after.assignment_id, "state": after.state.value}


ASSIGNMENT_ROWS: Final = AssignmentRows()


def new_assignment(machine_id: str, project_id: str, now_ms: int) -> AssignmentRow:
    return AssignmentRow(new_id("assignment"), machine_id, project_id, 0, 1,
                         AssignmentState.UNPLACED, 1, now_ms, now_ms)  # fmt: skip


def creation_write(record: AssignmentRow) -> Write:
    """The `place` transition that creates `record` (through the one write path)."""
    return Write(changes=(Change(ASSIGNMENT_ROWS, ASSIGNMENT_TABLE, None, record,
                                 (AssignmentEvent.PLACE,), actor_id=record.id),))  # fmt: skip


def find_assignment(conn: sqlite3.Connection, machine_id: str,
                    project_id: str) -> AssignmentRow | None:  # fmt: skip
    """The assignment of `project_id` on `machine_id`, if one was made."""
    row = conn.execute(f"SELECT {_COLUMNS} FROM machine_assignments WHERE machine_id = ? AND"
                       " project_id = ?", (machine_id, project_id)).fetchone()  # fmt: skip
    return None if row is None else AssignmentRow.from_row(row)


def get_assignment(conn: sqlite3.Connection, assignment_id: str) -> AssignmentRow | None:
    row = conn.execute(f"SELECT {_COLUMNS} FROM machine_assignments WHERE assignment_id = ?",
                       (assignment_id,)).fetchone()  # fmt: skip
    return None if row is None else AssignmentRow.from_row(row)


def all_assignments(conn: sqlite3.Connection) -> list[AssignmentRow]:
    rows = conn.execute(f"SELECT {_COLUMNS} FROM machine_assignments ORDER BY created_ms")
    return [AssignmentRow.from_row(row) for row in rows]


def assignments_in(conn: sqlite3.Connection, states: Sequence[str]) -> list[AssignmentRow]:
    """The assignments in `states` (the runtime's recovery reads them at a Control start)."""
    marks = ", ".join("?" * len(states))
    rows = conn.execute(f"SELECT {_COLUMNS} FROM machine_assignments WHERE phase IN ({marks})"
                        " ORDER BY created_ms", tuple(states))  # fmt: skip
    return [AssignmentRow.from_row(row) for row in rows]


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
