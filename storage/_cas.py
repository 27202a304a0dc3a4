"""Compare-and-set on revisioned rows: a change names the revision it was judged against.

`compare_and_set` updates a row only if it is still at the expected revision and bumps the
revision by one in the same statement; otherwise it raises `revision_conflict` (or
`resource_not_found`) and changes nothing. Table and column names come from a fixed map and
the live schema, never from the caller's text, so they cannot inject SQL.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from typing import Any, Final

from maia.core import MaiaError

# table -> (key column, resource name used in errors)
REVISIONED_TABLES: Final = {
    "projects": ("project_id", "project"),
    "sessions": ("session_id", "session"),
    "turns": ("turn_id", "turn"),
}


_COLUMNS: dict[str, frozenset[str]] = {}  # the schema only changes by migration, before use


def _columns(conn: sqlite3.Connection, table: str) -> frozenset[str]:
    columns = _COLUMNS.get(table)
    if columns is None:
        columns = frozenset(row[1] for row in conn.execute(f"PRAGMA table_info({table})"))
        _COLUMNS[table] = columns
    return columns


def read_revision(conn: sqlite3.Connection, table: str, row_id: str) -> int | None:
    """The current revision of a row, or None if it does not exist."""
    key, _ = REVISIONED_TABLES[table]
    row = conn.execute(f"SELECT revision FROM {table} WHERE {key} = ?", (row_id,)).fetchone()
    return None if row is None else int(row[0])


def compare_and_set(
    conn: sqlite3.Connection,
    table: str,
    row_id: str,
    *,
    expected_revision: int,
    changes: Mapping[str, Any],
    now_ms: int | None = None,
) -> int:
    """Apply `changes` to the row if it is at `expected_revision`; return the new revision.

    Sets `updated_ms` too when `now_ms` is given and the table has it. Raises
    `revision_conflict` (details: expected, actual) or `resource_not_found`, having changed
    nothing; ValueError for a table or column that is not revisioned state (a caller bug).
    """
    if table not in REVISIONED_TABLES:
        raise ValueError(f"{table} is not a revisioned table")
    key, resource = REVISIONED_TABLES[table]
    columns = _columns(conn, table)
    assignments = dict(changes)
    if now_ms is not None and "updated_ms" in columns:
        assignments["updated_ms"] = now_ms
    unknown = set(assignments) - columns | (set(assignments) & {key, "revision"})
    if unknown:
        raise ValueError(f"cannot set {sorted(unknown)} on {table}")
    sets = "".join(f"{name} = ?, " for name in assignments)
    changed = conn.execute(
        f"UPDATE {table} SET {sets}revision = revision + 1 WHERE {key} = ? AND revision = ?",
        (*assignments.values(), row_id, expected_revision),
    ).rowcount
    if changed == 1:
        return expected_revision + 1
    actual = read_revision(conn, table, row_id)
    if actual is None:
        raise MaiaError(
            "resource_not_found",
            f"{resource} {row_id} does not exist",
            {"resource": resource, "id": row_id},
        )
    raise MaiaError(
        "revision_conflict",
        f"{resource} {row_id} is at revision {actual}, not {expected_revision}",
        {"resource": resource, "id": row_id, "expected": expected_revision, "actual": actual},
    )
