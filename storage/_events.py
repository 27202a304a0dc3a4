"""The event journal: append inside the transaction of the state it describes, read, prune.

Each event gets a global journal position (never reused: the rowid after the newest event,
or the oldest retained position when pruning emptied the journal) and a per-owner sequence
that is gap-free: the next sequence is computed in the same transaction from the owner's
newest retained event, or from `pruned_owner_heads` when pruning removed all of an owner's
events, so a rolled-back savepoint leaves no hole and pruning never restarts a sequence.
An event's ID carries its position (`positioned_id`: no index of event IDs), and the owner
index is keyed by a number per owner (`event_owners`, `OWNER_NO`; docs/storage.md, "IDs that
carry their row's key").

Pruning deletes a prefix of the journal and records the oldest retained position; a reader
behind it must reset (`cursor_reset_required`), never guess.

The envelope (spec: EventV1): every event has a `causationId` and a `correlationId`, and an
`attemptId`, `activationId` and `commandId` where they apply. A caller names them on
`append_event`, or opens an `event_context` around the code that appends (the writer thread
keeps it, like the collection below): `run_mutation` opens one for each command, so a
command's correlation reaches every event it causes without each call site passing it. A
root event with neither (a Node-initiated transition) is its own cause and correlation.
Rows written before the envelope columns existed read with the same defaults.

Call these inside a `Storage.write` fn (append, prune) or a `Storage.read` fn (reads).
"""

from __future__ import annotations

import operator
import sqlite3
import threading
from collections.abc import Sequence
from typing import Any, Final, Literal

import attrs
import orjson

from maia.core import MaiaError

from ._heads import JournalHeads, active_heads, current_heads
from ._ids import id_position, positioned_event_id

Classification = Literal["public", "operator", "project", "sensitive"]
MAX_PAGE: Final = 1000
# The batch loop collects the events a batch appends, to hand them to commit listeners
# once the batch committed (see `Storage.add_commit_listener`). Unset outside the writer.
_collected = threading.local()

EVENT_SCHEMA_VERSION: Final = "maia.event.v1"
# The event columns in `EventRecord.from_row`'s order (readers elsewhere select these too).
EVENT_COLUMNS: Final = (
    "position, event_id, event_type, owner_type, owner_id, owner_seq, aggregate_revision,"
    " project_id, session_id, actor_id, causation_id, correlation_id, classification,"
    " occurred_ms, payload, schema_version, attempt_id, activation_id, command_id"
)
_COLUMNS: Final = EVENT_COLUMNS
# An owner's number, for a query by owner (`WHERE owner_no = {OWNER_NO}`, the owner ID bound):
# the journal's owner index is `UNIQUE (owner_no, owner_seq)` (migration
# `_PAGES_EVENT_OWNER_NUMBERS`); NULL, so matching nothing, for an owner without events.
OWNER_NO: Final = "(SELECT owner_no FROM event_owners WHERE owner_id = ?)"
_NEXT: Final = (
    "SELECT n, coalesce((SELECT max(owner_seq) FROM events WHERE owner_no = n),"
    " (SELECT last_seq FROM pruned_owner_heads WHERE owner_id = ?1), 0) + 1,"
    " (SELECT max(position) FROM events)"
    " FROM (SELECT (SELECT owner_no FROM event_owners WHERE owner_id = ?1) AS n)"
)
_envelope = threading.local()
_NUMBER_OWNER: Final = "INSERT INTO event_owners (owner_id) VALUES (?)"
_NUMBER_NEW_OWNER: Final = "INSERT OR IGNORE INTO event_owners (owner_id) VALUES (?)"
# The four columns an append decides first (`_appended`), then what the caller gives.
_INSERT: Final = (
    "INSERT INTO events (position, event_id, owner_seq, owner_no, event_type, owner_type,"
    " owner_id, aggregate_revision, project_id, session_stored, actor_id, causation_stored,"
    " correlation_stored, classification, occurred_ms, payload, schema_stored,"
    " attempt_id, activation_id, command_id)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


@attrs.frozen
class Envelope:
    """What the events appended inside an `event_context` share (None: not known here)."""

    correlation_id: str | None = None
    causation_id: str | None = None
    attempt_id: str | None = None
    activation_id: str | None = None
    command_id: str | None = None
    actor_id: str | None = None  # the client actor whose command it records


def current_envelope() -> Envelope:
    """The innermost open `event_context` of this thread (an empty envelope outside one)."""
    current: Envelope | None = getattr(_envelope, "value", None)
    return current if current is not None else Envelope()


def event_context(envelope: Envelope, *, inherit: bool = True) -> _EventContext:
    """Events appended in the block get `envelope`'s fields (an explicit argument of
    `append_event` still wins). With `inherit`, fields it leaves None come from the
    enclosing context; without, it replaces that context whole (a command's own)."""
    return _EventContext(envelope, inherit)


_ENVELOPE_FIELDS: Final = operator.attrgetter(*(f.name for f in attrs.fields(Envelope)))


class _EventContext:
    """`event_context`'s block: a plain class, since it is entered once or twice per write
    (half the cost of a generator-based context manager merging with `attrs.astuple`)."""

    __slots__ = ("_envelope", "_inherit", "_outer")

    def __init__(self, envelope: Envelope, inherit: bool) -> None:
        self._envelope = envelope
        self._inherit = inherit
        self._outer: Envelope | None = None

    def __enter__(self) -> Envelope:
        outer: Envelope | None = getattr(_envelope, "value", None)
        value = self._envelope
        if self._inherit and outer is not None:
            pairs = zip(_ENVELOPE_FIELDS(value), _ENVELOPE_FIELDS(outer), strict=True)
            value = Envelope(*(mine if mine is not None else theirs for mine, theirs in pairs))
        self._outer = outer
        _envelope.value = value
        return value

    def __exit__(self, *_: object) -> None:
        _envelope.value = self._outer


@attrs.frozen
class EventRecord:
    """One journal entry (the spec's EventV1 fields, with times as epoch milliseconds)."""

    position: int
    event_id: str
    event_type: str
    owner_type: str
    owner_id: str
    owner_sequence: int
    aggregate_revision: int | None
    project_id: str | None
    session_id: str | None
    actor_id: str | None
    causation_id: str  # what caused it: a command, the turn's dispatch; itself for a root
    correlation_id: str  # the command (or root event) it descends from
    classification: str
    occurred_ms: int
    payload: Any
    schema_version: str = EVENT_SCHEMA_VERSION
    attempt_id: str | None = None  # the worker attempt it came from
    activation_id: str | None = None  # the turn's dispatch (activation) it belongs to
    command_id: str | None = None  # the client command it answers

    @classmethod
    def from_row(cls, row: Sequence[Any]) -> EventRecord:
        # Rows from before the envelope columns: their own cause and correlation, v1.
        return cls(
            position=row[0],
            event_id=row[1],
            event_type=row[2],
            owner_type=row[3],
            owner_id=row[4],
            owner_sequence=row[5],
            aggregate_revision=row[6],
            project_id=row[7],
            session_id=row[8],
            actor_id=row[9],
            causation_id=row[10] or row[1],
            correlation_id=row[11] or row[1],
            classification=row[12],
            occurred_ms=row[13],
            payload=orjson.loads(row[14]),
            schema_version=row[15] or EVENT_SCHEMA_VERSION,
            attempt_id=row[16],
            activation_id=row[17],
            command_id=row[18],
        )


@attrs.frozen
class EventPage:
    """Events in journal order, the position to continue after, and the pruned horizon."""

    events: tuple[EventRecord, ...]
    last_position: int  # the position to read after next (unchanged when the page is empty)
    oldest_retained_position: int


def append_event(
    conn: sqlite3.Connection,
    *,
    owner_id: str,
    event_type: str,
    payload: Any,
    now_ms: int,
    owner_type: str = "session",
    aggregate_revision: int | None = None,
    project_id: str | None = None,
    session_id: str | None = None,
    actor_id: str | None = None,
    causation_id: str | None = None,
    correlation_id: str | None = None,
    classification: Classification = "operator",
    attempt_id: str | None = None,
    activation_id: str | None = None,
    command_id: str | None = None,
) -> EventRecord:
    """Append one event for `owner_id`; returns it with its position and owner sequence.
    Envelope fields left None come from the open `event_context`, else the defaults.

    Raises TypeError if `payload` is not JSON-serializable.
    """
    ambient: Envelope | None = getattr(_envelope, "value", None)
    if ambient is not None:
        correlation_id = correlation_id or ambient.correlation_id
        causation_id = causation_id or ambient.causation_id
        attempt_id = attempt_id or ambient.attempt_id
        activation_id = activation_id or ambient.activation_id
        command_id = command_id or ambient.command_id
        actor_id = actor_id or ambient.actor_id
    body = orjson.dumps(payload).decode()
    # session_id, schema_version, causation_id and correlation_id are generated columns: ''
    # stores "the owner's ID", "the current version" and "the command's ID" in no bytes
    # (migration `_PAGES_LEAN_EVENT_ROWS`). The current schema version is always stored ''.
    # A root's cause and correlation are stored NULL: they read as the event's own ID.
    given = (event_type, owner_type, owner_id, aggregate_revision, project_id,
             "" if session_id == owner_id else session_id, actor_id,
             "" if causation_id is not None and causation_id == command_id else causation_id,
             "" if correlation_id is not None and correlation_id == command_id
             else correlation_id,
             classification, now_ms, body, "", attempt_id, activation_id, command_id)  # fmt: skip
    start, event_id, sequence = _appended(conn, owner_id, given)
    record = EventRecord(start, event_id, event_type, owner_type, owner_id, sequence,
                         aggregate_revision, project_id, session_id, actor_id,
                         causation_id or event_id, correlation_id or event_id, classification,
                         now_ms, payload, EVENT_SCHEMA_VERSION, attempt_id, activation_id,
                         command_id)  # fmt: skip
    collected: list[EventRecord] | None = getattr(_collected, "events", None)
    if collected is not None:
        collected.append(record)
    return record


def _appended(conn: sqlite3.Connection, owner_id: str, given: tuple[Any, ...]
              ) -> tuple[int, str, int]:  # fmt: skip
    """Insert the event (`given`: its columns after the first four of `_INSERT`) at the
    journal's head; its position, ID and owner sequence. From the writer's `JournalHeads`
    when it keeps this owner's (one statement, `storage/_heads.py`), else read first."""
    heads = current_heads()
    if heads is not None and heads.conn is not conn:
        heads = None  # another connection's: this one reads
    if heads is not None and heads.newest is not None:
        kept = heads.owners.get(owner_id)
        if kept is None and heads.all_pruned_numbered():
            # An owner not kept may be new: numbering it first (ignored if it has a number)
            # says so, and a new owner's first sequence is 1, since every owner with a
            # pruned head has a number (`JournalHeads.all_pruned_numbered`). That saves the
            # read of its head, which a Session's first event (session.create) paid.
            numbered = conn.execute(_NUMBER_NEW_OWNER, (owner_id,))
            if numbered.rowcount == 1 and numbered.lastrowid is not None:
                kept = (numbered.lastrowid, 1)
        if kept is not None:
            number, next_seq = kept
            at = heads.newest + 1
            kept_id = positioned_event_id(at)
            try:
                # NULL: SQLite takes the rowid after the largest, the position expected
                # when no event was removed or added behind the heads.
                got = conn.execute(_INSERT, (None, kept_id, next_seq, number, *given))
            except sqlite3.IntegrityError:
                got = None  # the sequence is taken: the heads are stale
            if got is not None and got.lastrowid == at:
                heads.noted(owner_id, at, number, next_seq)
                return at, kept_id, next_seq
            if got is not None:
                conn.execute("DELETE FROM events WHERE position = ?", (got.lastrowid,))
            heads.forget()
    # Two plain statements beat one INSERT .. RETURNING (which SQLite materializes) by ~40%.
    # The first reads the owner's number (`event_owners`), its next sequence, and the newest
    # position: the next one follows it, or is the oldest retained one when the journal is
    # empty (pruned empty, or new). The event's ID carries its position (`positioned_id`),
    # so the journal keeps no index of event IDs.
    owner_no, sequence, newest = conn.execute(_NEXT, (owner_id,)).fetchone()
    if heads is not None:
        heads.settle(newest)  # another owner's kept head may be stale (see `settle`)
    if owner_no is None:  # its first event: number the owner (rolled back with the event)
        owner_no = conn.execute(_NUMBER_OWNER, (owner_id,)).lastrowid
    start = oldest_retained_position(conn) if newest is None else newest + 1
    event_id = positioned_event_id(start)
    conn.execute(_INSERT, (start, event_id, sequence, owner_no, *given))
    if heads is not None:
        heads.noted(owner_id, start, owner_no, sequence)
    return start, event_id, sequence


def event_correlation(conn: sqlite3.Connection, event_id: str) -> str | None:
    """The correlation of a retained event (its own ID for a row from before the envelope),
    or None when it is not kept."""
    row = _event_row(conn, "coalesce(correlation_id, event_id)", event_id)
    return None if row is None else str(row[0])


def event_position(conn: sqlite3.Connection, event_id: str) -> int | None:
    """The journal position of a retained event, or None when it is not kept."""
    row = _event_row(conn, "position", event_id)
    return None if row is None else int(row[0])


# The events written before event IDs carried their position, and only those, are in the
# partial index `events_by_legacy_id` (migration `_PAGES_EVENT_ID_FROM_POSITION`); a query
# names its WHERE inline for SQLite to prove it may use it.
LEGACY_EVENT_IDS: Final = "(length(event_id) <> 56 OR event_id < 'event_f')"


def _event_row(conn: sqlite3.Connection, columns: str, event_id: str) -> Any:
    """`columns` of the event whose ID is `event_id`: by its position, which the ID carries,
    else (an ID from before that) through the index of those older IDs."""
    position = id_position("event", event_id)
    if position is not None:
        return conn.execute(
            f"SELECT {columns} FROM events WHERE position = ? AND event_id = ?",
            (position, event_id),
        ).fetchone()
    return conn.execute(
        f"SELECT {columns} FROM events WHERE event_id = ? AND {LEGACY_EVENT_IDS}", (event_id,)
    ).fetchone()


def collect_appended(events: list[EventRecord] | None) -> None:
    """In the batch loop: collect every event appended from now on into `events` (None:
    stop collecting)."""
    _collected.events = events


def still_stored(conn: sqlite3.Connection, records: list[EventRecord],
                 heads: JournalHeads | None = None) -> list[EventRecord]:  # fmt: skip
    """Of the events a transaction appended (in append order), those its rows still hold.

    A savepoint of a write fn's own, rolled back, takes its events out of the journal
    without the writer seeing it, and the next event may get the same position. So before a
    batch commits: when the positions rise and the newest row is the last record, all are
    stored (one look-up); otherwise keep the records whose position and ID are in a row.
    `heads`: the writer's, settled on the newest position seen (so they are right when the
    transaction commits, whatever another writer adds later: `storage/_heads.py`).
    """
    if not records:
        return records
    previous = 0
    for record in records:
        if record.position <= previous:
            break
        previous = record.position
    else:
        newest = conn.execute(
            "SELECT position, event_id FROM events ORDER BY position DESC LIMIT 1"
        ).fetchone()
        last = records[-1]
        if newest is not None and tuple(newest) == (last.position, last.event_id):
            if heads is not None:
                heads.settle(last.position)
            return records
    first = min(record.position for record in records)
    stored = set(
        conn.execute("SELECT position, event_id FROM events WHERE position >= ?", (first,))
    )
    if heads is not None:  # none at or after `first`: the newest is not known here
        heads.settle(max(position for position, _ in stored) if stored else None)
    return [record for record in records if (record.position, record.event_id) in stored]


def oldest_retained_position(conn: sqlite3.Connection) -> int:
    """The first journal position not pruned (1 until something was pruned)."""
    row = conn.execute(
        "SELECT value FROM storage_meta WHERE key = 'oldest_retained_position'"
    ).fetchone()
    return int(row[0])


def _check_limit(limit: int) -> None:
    if not 1 <= limit <= MAX_PAGE:
        raise MaiaError("validation_failed", f"limit: must be 1-{MAX_PAGE}", {"path": "limit"})


def read_events(
    conn: sqlite3.Connection,
    *,
    after_position: int = 0,
    limit: int = 64,
    owner_id: str | None = None,
    event_types: Sequence[str] | None = None,
) -> EventPage:
    """Events with position > `after_position`, in journal order, optionally filtered.

    Raises `cursor_reset_required` if events after `after_position` were pruned, and
    `validation_failed` for a limit outside 1..MAX_PAGE.
    """
    _check_limit(limit)
    horizon = oldest_retained_position(conn)
    if after_position + 1 < horizon:
        raise MaiaError(
            "cursor_reset_required",
            f"events after position {after_position} were pruned; the journal starts at {horizon}",
            {"oldestRetainedPosition": horizon},
        )
    sql = f"SELECT {_COLUMNS} FROM events WHERE position > ?"
    args: list[Any] = [after_position]
    if owner_id is not None:
        sql += f" AND owner_no = {OWNER_NO}"
        args.append(owner_id)
    if event_types:
        sql += f" AND event_type IN ({', '.join('?' * len(event_types))})"
        args.extend(event_types)
    sql += " ORDER BY position LIMIT ?"
    args.append(limit)
    events = tuple(EventRecord.from_row(row) for row in conn.execute(sql, args))
    last = events[-1].position if events else after_position
    return EventPage(events, last, horizon)


_OWNER_PAGE: Final = (
    f"SELECT {_COLUMNS} FROM events WHERE owner_no = {OWNER_NO} AND owner_seq > ?"
    " ORDER BY owner_seq LIMIT ?"
)


def read_owner_events(
    conn: sqlite3.Connection, owner_id: str, *, after_sequence: int = 0, limit: int = 64
) -> tuple[EventRecord, ...]:
    """One owner's events with sequence > `after_sequence`, in sequence order.

    Raises `cursor_reset_required` when the next wanted sequence was pruned.
    """
    _check_limit(limit)
    rows = conn.execute(_OWNER_PAGE, (owner_id, after_sequence, limit)).fetchall()
    if rows and rows[0][5] != after_sequence + 1:
        raise MaiaError(
            "cursor_reset_required",
            f"events of {owner_id} after sequence {after_sequence} were pruned",
            {"ownerId": owner_id, "oldestRetainedSequence": rows[0][5]},
        )
    if not rows and after_sequence > 0:
        head = conn.execute(
            "SELECT last_seq FROM pruned_owner_heads WHERE owner_id = ?", (owner_id,)
        ).fetchone()
        if head is not None and head[0] > after_sequence:
            raise MaiaError(
                "cursor_reset_required",
                f"events of {owner_id} after sequence {after_sequence} were pruned",
                {"ownerId": owner_id},
            )
    return tuple(EventRecord.from_row(row) for row in rows)


def prune_events(conn: sqlite3.Connection, *, before_position: int) -> int:
    """Delete events with position < `before_position`; return how many were deleted.

    Keeps each affected owner's last sequence so its next event continues the sequence, and
    moves the oldest-retained marker. The marker never moves back.
    """
    horizon = oldest_retained_position(conn)
    if before_position <= horizon:
        return 0
    heads = active_heads(conn)
    if heads is not None:
        heads.forget()  # they stay right (positions and sequences run on), but read again
    # Owners whose newest event is being pruned keep their head in pruned_owner_heads.
    conn.execute(
        "INSERT INTO pruned_owner_heads (owner_id, last_seq)"
        " SELECT owner_id, max(owner_seq) FROM events WHERE position < ? GROUP BY owner_id"
        " ON CONFLICT (owner_id) DO UPDATE SET last_seq = max(last_seq, excluded.last_seq)",
        (before_position,),
    )
    deleted = conn.execute("DELETE FROM events WHERE position < ?", (before_position,)).rowcount
    conn.execute(
        "UPDATE storage_meta SET value = ? WHERE key = 'oldest_retained_position'",
        (before_position,),
    )
    return int(deleted)
