"""The machines table (migration `_MACHINES` in storage/_schema.py): one row per Execution
Node name enrolled on this Control Node, and its reads and writes.

A row moves pending (a token was issued) -> enrolled (the token was redeemed: a credential
exists) -> revoked. A fresh enrollment of a revoked name reuses the row with the next
registration incarnation (spec MN0, restore and rollback: a revoked credential is recovered
only by a fresh enrollment). Call these inside a `Storage.write` or `Storage.read` fn.
"""

from __future__ import annotations

import enum
import sqlite3
from typing import Final

import attrs

from supervision.leases import RegistrationRecord

MAX_MACHINES: Final = 64
_COLUMNS: Final = (
    "machine_id, name, state, incarnation, revocation_revision, credential_revision,"
    " recovery_required, token_hash, token_expires_ms, credential_hash, execution_node_id,"
    " revision, created_ms, updated_ms, enrolled_ms, last_seen_ms"
)


class MachineState(enum.Enum):
    PENDING = "pending"
    ENROLLED = "enrolled"
    REVOKED = "revoked"


@attrs.frozen
class MachineRecord:
    """One machines row. The hashes are sha256 hex of the token and the credential."""

    machine_id: str
    name: str
    state: MachineState
    incarnation: int
    revocation_revision: int
    credential_revision: int | None
    recovery_required: bool
    token_hash: str | None
    token_expires_ms: int | None
    credential_hash: str | None
    execution_node_id: str | None
    revision: int
    created_ms: int
    updated_ms: int
    enrolled_ms: int | None
    last_seen_ms: int | None

    @property
    def registration(self) -> RegistrationRecord:
        """The MN0 registration record the lease rules judge (`supervision.leases.judge`)."""
        return RegistrationRecord(
            node_id=self.machine_id,
            incarnation=self.incarnation,
            revocation_revision=self.revocation_revision,
            revoked=self.state is MachineState.REVOKED,
            recovery_required=self.recovery_required,
        )


def _record(row: tuple[object, ...]) -> MachineRecord:
    values = list(row)
    values[2] = MachineState(values[2])
    values[6] = bool(values[6])
    return MachineRecord(*values)  # type: ignore[arg-type]


def get_machine(conn: sqlite3.Connection, *, name: str | None = None,
                machine_id: str | None = None) -> MachineRecord | None:  # fmt: skip
    """The row named `name`, or with ID `machine_id` (exactly one of them)."""
    column, value = ("name", name) if name is not None else ("machine_id", machine_id)
    row = conn.execute(f"SELECT {_COLUMNS} FROM machines WHERE {column} = ?", (value,)).fetchone()
    return None if row is None else _record(row)


def list_machines(conn: sqlite3.Connection) -> list[MachineRecord]:
    """Every row, by name."""
    rows = conn.execute(f"SELECT {_COLUMNS} FROM machines ORDER BY name").fetchall()
    return [_record(row) for row in rows]


def count_machines(conn: sqlite3.Connection) -> int:
    return int(conn.execute("SELECT count(*) FROM machines").fetchone()[0])


def insert_pending(conn: sqlite3.Connection, record: MachineRecord) -> None:
    conn.execute(
        f"INSERT INTO machines ({_COLUMNS}) VALUES ({', '.join('?' * 16)})",
        _values(record),
    )


def update_machine(conn: sqlite3.Connection, record: MachineRecord) -> None:
    """Write `record` over its row (the caller moved its revision on)."""
    names = [c.strip() for c in _COLUMNS.split(",")]
    sets = ", ".join(f"{name} = ?" for name in names[1:])
    values = _values(record)
    conn.execute(f"UPDATE machines SET {sets} WHERE machine_id = ?", (*values[1:], values[0]))


def touch_machine(conn: sqlite3.Connection, machine_id: str, now_ms: int) -> None:
    """Record that the machine's link was seen (not a revision: no one decides on it)."""
    conn.execute("UPDATE machines SET last_seen_ms = ? WHERE machine_id = ?", (now_ms, machine_id))


def _values(record: MachineRecord) -> tuple[object, ...]:
    values = list(attrs.astuple(record, recurse=False))
    values[2] = record.state.value
    values[6] = int(record.recovery_required)
    return tuple(values)
