"""Reading the journal for the streams: filtered replay pages and a bounded tail snapshot.

Filters that are columns (event type, Session, Project, classification) go into the SQL;
the domain and importance are checked in Python by the query's matcher. Each function runs
inside one `Storage.read` (one short read transaction).
"""

from __future__ import annotations

import sqlite3
from typing import Any, Final

import attrs

from maia.core import MaiaError
from storage import EVENT_COLUMNS, EventRecord, oldest_retained_position

from ._query import Matcher, ObservationQuery

REPLAY_PAGE: Final = 512
SNAPSHOT_SCAN_MAX: Final = 20_000  # rows looked at for a tail snapshot before it is truncated
_COLUMNS: Final = EVENT_COLUMNS


def _where(query: ObservationQuery) -> tuple[str, list[Any]]:
    clauses: list[str] = []
    args: list[Any] = []
    for column, values in (
        ("event_type", query.event_types),
        ("session_id", query.session_ids),
        ("project_id", query.project_ids),
        ("classification", query.classifications),
    ):
        if values:
            clauses.append(f"{column} IN ({', '.join('?' * len(values))})")
            args.extend(values)
    return "".join(f" AND {c}" for c in clauses), args


def _matches(matcher: Matcher, event: EventRecord) -> bool:
    return matcher.matches(
        event_type=event.event_type,
        importance="authoritative",
        project_id=event.project_id,
        session_id=event.session_id,
        classification=event.classification,
    )


@attrs.frozen
class ReplayPage:
    events: tuple[EventRecord, ...]  # the matching ones
    covered: int  # the journal position this page read through
    full: bool  # whether more rows may follow


def replay_page(
    conn: sqlite3.Connection, query: ObservationQuery, after: int, limit: int = REPLAY_PAGE
) -> ReplayPage:
    """Matching events after journal position `after`.

    Raises `cursor_reset_required` when events after `after` were pruned.
    """
    horizon = oldest_retained_position(conn)
    if after + 1 < horizon:
        raise MaiaError(
            "cursor_reset_required",
            f"the cursor can no longer be served: events after position {after} were pruned",
            {"reason": "pruned", "oldestRetainedPosition": horizon},
        )
    where, args = _where(query)
    rows = conn.execute(
        f"SELECT {_COLUMNS} FROM events WHERE position > ?{where} ORDER BY position LIMIT ?",
        [after, *args, limit],
    ).fetchall()
    events = [EventRecord.from_row(row) for row in rows]
    matcher = Matcher(query)
    full = len(rows) == limit
    if full:
        covered = events[-1].position
    else:  # read to the head: later positions that did not match are covered too
        covered = max(after, int(conn.execute("SELECT coalesce(max(position), 0) FROM events")
                                 .fetchone()[0]))  # fmt: skip
    return ReplayPage(tuple(e for e in events if _matches(matcher, e)), covered, full)


@attrs.frozen
class Snapshot:
    events: tuple[EventRecord, ...]  # the newest matching events, oldest first
    head: int  # the journal position it stands at
    truncated: bool  # older matches exist, or the scan stopped before the start


def tail_snapshot(conn: sqlite3.Connection, query: ObservationQuery) -> Snapshot:
    """The newest `query.limit` matching events and the journal head, in one read;
    `truncated` when older matching events exist (one more match is looked for) or the scan
    stopped at its bound before the journal's start."""
    head = int(conn.execute("SELECT coalesce(max(position), 0) FROM events").fetchone()[0])
    # limit 0 still looks for one match: `truncated` says whether the limit left any out
    if query.importance and "authoritative" not in query.importance:
        return Snapshot((), head, False)
    where, args = _where(query)
    matcher = Matcher(query)
    found: list[EventRecord] = []
    wanted = query.limit + 1  # one past the limit: whether the limit cut an older match off
    before, scanned = head + 1, 0
    while len(found) < wanted and scanned < SNAPSHOT_SCAN_MAX:
        rows = conn.execute(
            f"SELECT {_COLUMNS} FROM events WHERE position < ?{where}"
            " ORDER BY position DESC LIMIT ?",
            [before, *args, REPLAY_PAGE],
        ).fetchall()
        if not rows:
            return Snapshot(tuple(reversed(found)), head, False)
        scanned += len(rows)
        for row in rows:
            event = EventRecord.from_row(row)
            if _matches(matcher, event):
                found.append(event)
                if len(found) == wanted:
                    break
        if len(found) < wanted and len(rows) < REPLAY_PAGE:  # it read the journal's start
            return Snapshot(tuple(reversed(found)), head, False)
        before = rows[-1][0]
    return Snapshot(tuple(reversed(found[: query.limit])), head, True)
