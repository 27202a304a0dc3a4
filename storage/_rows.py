"""Thin helpers over the first slice's tables: projects, sessions, turns, turn items, attempts.

Rows are frozen attrs classes built by `from_row`; inserts take a row object. They own no
rules: states, transitions and limits belong to the actors above, which call these inside a
`Storage.write` fn (with `append_event` and `run_mutation`) and change revisioned rows through
`compare_and_set`. Times are epoch milliseconds from the injected clock; JSON columns hold
orjson text.
"""

from __future__ import annotations

import functools
import operator
import sqlite3
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any, Final, TypeVar

import attrs
import orjson

from maia.core import MaiaError


def _missing(resource: str, row_id: str) -> MaiaError:
    return MaiaError(
        "resource_not_found",
        f"{resource} {row_id} does not exist",
        {"resource": resource, "id": row_id},
    )


@attrs.frozen
class ProjectRow:
    project_id: str
    project_key: str
    root: str
    name: str | None
    revision: int
    created_ms: int
    updated_ms: int


@attrs.frozen
class SessionRow:
    session_id: str
    project_id: str
    executor: str
    title: str | None
    labels: Mapping[str, str]
    cwd: str | None
    state: str
    activity: str
    revision: int
    created_ms: int
    updated_ms: int
    archived: bool
    archived_ms: int | None
    archive_summary: str | None
    transcript_path: str | None
    latest_turn_id: str | None


@attrs.frozen
class TurnRow:
    turn_id: str
    session_id: str
    seq: int
    state: str
    revision: int
    text: str
    failure_reason: str | None
    created_ms: int
    started_ms: int | None
    finished_ms: int | None


@attrs.frozen
class TurnItemRow:
    item_id: str
    turn_id: str
    seq: int
    kind: str
    text: str
    state: str
    created_ms: int
    updated_ms: int


@attrs.frozen
class WorkerAttemptRow:
    attempt_id: str
    session_id: str
    epoch: int
    node_epoch: int
    state: str
    pid: int | None
    started_ms: int
    ended_ms: int | None
    end_reason: str | None


_FIELDS: Final[dict[type[Any], tuple[str, ...]]] = {
    cls: tuple(f.name for f in attrs.fields(cls))
    for cls in (ProjectRow, SessionRow, TurnRow, TurnItemRow, WorkerAttemptRow)
}


_TABLES: Final[dict[type[Any], str]] = {
    ProjectRow: "projects",
    SessionRow: "sessions",
    TurnRow: "turns",
    TurnItemRow: "turn_items",
    WorkerAttemptRow: "worker_attempts",
}
# One prepared INSERT per row class; the statement cache then skips parsing.
_INSERTS: Final[dict[type[Any], str]] = {
    cls: f"INSERT INTO {table} ({', '.join(_FIELDS[cls])})"
    f" VALUES ({', '.join('?' * len(_FIELDS[cls]))})"
    for cls, table in _TABLES.items()
}


_GETTERS: Final[dict[type[Any], Callable[[Any], tuple[Any, ...]]]] = {
    cls: operator.attrgetter(*fields) for cls, fields in _FIELDS.items()
}


def _insert(conn: sqlite3.Connection, row: Any) -> None:
    kind = type(row)
    values = _GETTERS[kind](row)  # attrgetter: a tenth of attrs.astuple's cost
    if kind is SessionRow:
        labels = row.labels
        values = (
            *values[:4],
            orjson.dumps(labels if type(labels) is dict else dict(labels)).decode(),
            *values[5:11],
            int(row.archived),
            *values[12:],
        )
    conn.execute(_INSERTS[kind], values)


def _from(cls: type[Any], row: Sequence[Any]) -> Any:
    values = dict(zip(_FIELDS[cls], row, strict=True))
    if cls is SessionRow:
        values["labels"] = orjson.loads(values["labels"])
        values["archived"] = bool(values["archived"])
    return cls(**values)


_Row = TypeVar("_Row", bound=Hashable)
_KINDS: Final = {
    "projects": "project",
    "sessions": "session",
    "turns": "turn",
    "worker_attempts": "attempt",
}


@functools.cache
def _select(cls: type, table: str, key: str) -> str:
    return f"SELECT {', '.join(_FIELDS[cls])} FROM {table} WHERE {key} = ?"


def _get(conn: sqlite3.Connection, cls: type[_Row], table: str, key: str, value: str) -> _Row:
    """The row of `table` whose `key` is `value`; raises `resource_not_found` naming it."""
    found = conn.execute(_select(cls, table, key), (value,)).fetchone()
    if found is None:
        raise _missing(_KINDS[table], value)
    result: _Row = _from(cls, found)
    return result


def insert_project(conn: sqlite3.Connection, row: ProjectRow) -> None:
    """Insert a project; raises sqlite3.IntegrityError for a duplicate id, key or root."""
    _insert(conn, row)


def get_project(conn: sqlite3.Connection, project_id: str) -> ProjectRow:
    """Raises `resource_not_found`."""
    return _get(conn, ProjectRow, "projects", "project_id", project_id)


def insert_session(conn: sqlite3.Connection, row: SessionRow) -> None:
    """Insert a Session; raises sqlite3.IntegrityError for an unknown project or duplicate id."""
    _insert(conn, row)


def get_session(conn: sqlite3.Connection, session_id: str) -> SessionRow:
    """Raises `resource_not_found`."""
    return _get(conn, SessionRow, "sessions", "session_id", session_id)


def next_turn_seq(conn: sqlite3.Connection, session_id: str) -> int:
    """The send-order number the Session's next turn gets (1 for the first)."""
    row = conn.execute("SELECT max(seq) FROM turns WHERE session_id = ?", (session_id,)).fetchone()
    return int(row[0] or 0) + 1


def insert_turn(conn: sqlite3.Connection, row: TurnRow) -> None:
    """Insert a turn; raises sqlite3.IntegrityError for a duplicate (session, seq)."""
    _insert(conn, row)


def get_turn(conn: sqlite3.Connection, turn_id: str) -> TurnRow:
    """Raises `resource_not_found`."""
    return _get(conn, TurnRow, "turns", "turn_id", turn_id)


def list_turns(
    conn: sqlite3.Connection, session_id: str, *, states: Sequence[str] | None = None
) -> tuple[TurnRow, ...]:
    """A Session's turns in send order, optionally only those in `states`."""
    sql = f"SELECT {', '.join(_FIELDS[TurnRow])} FROM turns WHERE session_id = ?"
    args: list[Any] = [session_id]
    if states:
        sql += f" AND state IN ({', '.join('?' * len(states))})"
        args.extend(states)
    return tuple(_from(TurnRow, r) for r in conn.execute(sql + " ORDER BY seq", args))


def insert_turn_item(conn: sqlite3.Connection, row: TurnItemRow) -> None:
    """Insert an item keyed by its turn and place (`item_key = turn_no << 24 | seq`); raises
    sqlite3.IntegrityError for an unknown turn or a place already taken."""
    conn.execute(
        "INSERT INTO turn_items (item_key, item_id, turn_id, seq, kind, text, state, created_ms,"
        " updated_ms) VALUES ((SELECT (turn_no << 24) + ? FROM turns WHERE turn_id = ?),"
        " ?, ?, ?, ?, ?, ?, ?, ?)",
        (row.seq, row.turn_id, *_GETTERS[TurnItemRow](row)),
    )


def list_turn_items(conn: sqlite3.Connection, turn_id: str) -> tuple[TurnItemRow, ...]:
    """A turn's items in order."""
    sql = (  # the turn's key range (turn_items.item_key = turn_no << 24 | seq)
        f"SELECT {', '.join(_FIELDS[TurnItemRow])} FROM turn_items WHERE item_key BETWEEN"
        " (SELECT turn_no << 24 FROM turns WHERE turn_id = ?)"
        " AND (SELECT (turn_no << 24) + 16777215 FROM turns WHERE turn_id = ?) ORDER BY item_key"
    )
    return tuple(_from(TurnItemRow, r) for r in conn.execute(sql, (turn_id, turn_id)))


def insert_worker_attempt(conn: sqlite3.Connection, row: WorkerAttemptRow) -> None:
    """Insert an attempt; its epoch must come from `next_worker_epoch` (unique)."""
    _insert(conn, row)


def get_worker_attempt(conn: sqlite3.Connection, attempt_id: str) -> WorkerAttemptRow:
    """Raises `resource_not_found`."""
    return _get(conn, WorkerAttemptRow, "worker_attempts", "attempt_id", attempt_id)
