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

from ._query import DOMAIN_OF_PREFIX, Matcher, ObservationQuery

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
    if query.importance and "authoritative" not in query.importance:
        return Snapshot((), head, False)
    where, args = _where(query)
    if query.limit == 0:  # `truncated` says whether the limit left any match out
        return Snapshot((), head, _any_match(conn, query, head, where, args))
    matcher = Matcher(query)
    found: list[EventRecord] = []
    wanted = query.limit + 1  # one past the limit: whether the limit cut an older match off
    before, scanned = head + 1, 0
    while len(found) < wanted and scanned < SNAPSHOT_SCAN_MAX:
        page = min(REPLAY_PAGE, SNAPSHOT_SCAN_MAX - scanned)  # never past the bound
        rows = conn.execute(
            f"SELECT {_COLUMNS} FROM events WHERE position < ?{where}"
            " ORDER BY position DESC LIMIT ?",
            [before, *args, page],
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
        if len(found) < wanted and len(rows) < page:  # it read the journal's start
            return Snapshot(tuple(reversed(found)), head, False)
        before = rows[-1][0]
    if len(found) < wanted:  # the scan stopped at its bound: truncated unless at the start
        return Snapshot(tuple(reversed(found)), head, _older_than(conn, before))
    return Snapshot(tuple(reversed(found[: query.limit])), head, True)


def _older_than(conn: sqlite3.Connection, position: int) -> bool:
    """Whether the journal holds a row before `position` (one index probe)."""
    return (
        conn.execute("SELECT 1 FROM events WHERE position < ? LIMIT 1", [position]).fetchone()
        is not None
    )


# An event type's first word (all of it when it has no dot), as `domain_of` reads it.
_PREFIX: Final = "substr(event_type, 1, instr(event_type || '.', '.') - 1)"


def _domain_clause(domains: tuple[str, ...]) -> tuple[str, list[Any]]:
    """SQL true for an event of one of `domains` (`domain_of` in SQL): its first word is a
    listed prefix of one of them, or, for `node`, any word not listed for another."""
    wanted = set(domains)
    if "node" in wanted:
        others = sorted(p for p, d in DOMAIN_OF_PREFIX.items() if d not in wanted)
        return f"{_PREFIX} NOT IN ({', '.join('?' * len(others))})", others
    mine = sorted(p for p, d in DOMAIN_OF_PREFIX.items() if d in wanted)
    return f"{_PREFIX} IN ({', '.join('?' * len(mine))})", mine


def _any_match(
    conn: sqlite3.Connection, query: ObservationQuery, head: int, where: str, args: list[Any]
) -> bool:
    """A limit-0 snapshot's `truncated`, the answer `tail_snapshot`'s scan gives (a match
    among the newest `SNAPSHOT_SCAN_MAX` rows the column filters pass; else, when the scan
    met its bound, whether older rows remain), in SQL: the first statement stops at the
    first match, and none decodes a row."""
    newest = (
        f"SELECT position, event_type FROM events WHERE position <= ?{where}"
        " ORDER BY position DESC LIMIT ?"
    )
    scope = [head, *args, SNAPSHOT_SCAN_MAX]
    clause, more = _domain_clause(query.domains) if query.domains else ("1", [])
    found = conn.execute(f"SELECT 1 FROM ({newest}) WHERE {clause} LIMIT 1", [*scope, *more])
    if found.fetchone() is not None:
        return True
    count, oldest = conn.execute(
        f"SELECT count(*), min(position) FROM ({newest})", scope
    ).fetchone()
    return count == SNAPSHOT_SCAN_MAX and _older_than(conn, oldest)
