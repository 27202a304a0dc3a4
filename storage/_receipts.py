"""Receipts (the spec's OperationReceiptV1): what each mutation did, kept at least 30 days.

A receipt row is also the mutation's idempotency key — `(actorId, operationId, commandId)` is
unique — and holds the stored result a duplicate replays, so key, receipt and result are one
write that commits or vanishes with the mutation. The first target is an indexed column of the
receipt and any further ones rows of `receipt_targets`, so a list by target does not scan and
the common one-target receipt costs one insert.
"""

from __future__ import annotations

import sqlite3
import sys
from collections.abc import Sequence
from typing import Any, Final, Literal

import attrs
import orjson

from maia.core import MaiaError, format_timestamp_ms

from ._ids import id_position

RECEIPT_SCHEMA_VERSION: Final = "maia.receipt.v1"
MIN_RECEIPT_RETENTION_MS: Final = 30 * 24 * 3600 * 1000
Outcome = Literal["applied", "rejected", "reconciled", "outcome-unknown"]

_COLUMNS: Final = (
    "receipt_id, command_id, operation_id, actor_id, project_id, input_digest, outcome,"
    " targets, event_ids, effect_ids, evidence_digest, created_ms, result, rowid, correlation_id"
)


@attrs.frozen
class ReceiptTarget:
    """One aggregate a mutation touched, with its revision before and after."""

    target_type: str
    target_id: str
    disposition: str  # created, updated, deleted, unchanged, ...
    prior_revision: int | None = None
    result_revision: int | None = None

    def to_wire(self) -> dict[str, Any]:
        wire: dict[str, Any] = {"targetType": self.target_type, "targetId": self.target_id}
        if self.prior_revision is not None:
            wire["priorRevision"] = self.prior_revision
        if self.result_revision is not None:
            wire["resultRevision"] = self.result_revision
        wire["disposition"] = self.disposition
        return wire

    @classmethod
    def from_wire(cls, wire: dict[str, Any]) -> ReceiptTarget:
        return cls(
            wire["targetType"],
            wire["targetId"],
            wire["disposition"],
            wire.get("priorRevision"),
            wire.get("resultRevision"),
        )


@attrs.frozen
class Receipt:
    """A stored receipt and the result its mutation returned."""

    receipt_id: str
    command_id: str
    operation_id: str
    actor_id: str
    project_id: str | None
    normalized_input_digest: str
    outcome: str
    targets: tuple[ReceiptTarget, ...]
    event_ids: tuple[str, ...]
    effect_ids: tuple[str, ...]
    evidence_digest: str
    created_ms: int
    result: Any
    sequence: int  # insertion order, for paging
    # The correlation its command's events carry; None on receipts from before the envelope.
    # Not a field of OperationReceiptV1 (receipt.get answers it beside the receipt).
    correlation_id: str | None = None

    @property
    def correlation(self) -> str:
        """The correlation of the command's events (its commandId unless told otherwise)."""
        return self.correlation_id or self.command_id

    @classmethod
    def from_row(cls, row: Sequence[Any]) -> Receipt:
        return cls(
            receipt_id=row[0],
            command_id=row[1],
            operation_id=row[2],
            actor_id=row[3],
            project_id=row[4],
            normalized_input_digest=row[5],
            outcome=row[6],
            targets=tuple(ReceiptTarget.from_wire(t) for t in orjson.loads(row[7])),
            event_ids=tuple(orjson.loads(row[8])),
            effect_ids=tuple(orjson.loads(row[9])),
            evidence_digest=row[10],
            created_ms=row[11],
            result=orjson.loads(row[12]),
            sequence=row[13],
            correlation_id=row[14],
        )

    def to_wire(self) -> dict[str, Any]:
        """The OperationReceiptV1 object."""
        wire: dict[str, Any] = {
            "schemaVersion": RECEIPT_SCHEMA_VERSION,
            "receiptId": self.receipt_id,
            "commandId": self.command_id,
            "operationId": self.operation_id,
            "actorId": self.actor_id,
        }
        if self.project_id is not None:
            wire["projectId"] = self.project_id
        wire.update(
            normalizedInputDigest=self.normalized_input_digest,
            outcome=self.outcome,
            targets=[t.to_wire() for t in self.targets],
            eventIds=list(self.event_ids),
            effectIds=list(self.effect_ids),
            evidenceDigest=self.evidence_digest,
            createdAt=format_timestamp_ms(self.created_ms),
        )
        return wire


def get_receipt(conn: sqlite3.Connection, receipt_id: str) -> Receipt:
    """The receipt `receipt_id`; raises `resource_not_found`."""
    row = receipt_row(conn, _COLUMNS, receipt_id)
    if row is None:
        raise MaiaError(
            "resource_not_found",
            f"receipt {receipt_id} does not exist",
            {"resource": "receipt", "id": receipt_id},
        )
    return Receipt.from_row(row)


# The receipts written before receipt IDs carried their sequence, and only those, are in the
# partial index `receipts_by_legacy_id` (migration `_PAGES_RECEIPT_ID_FROM_SEQUENCE`).
LEGACY_RECEIPT_IDS: Final = "(length(receipt_id) <> 58 OR receipt_id < 'receipt_f')"


def receipt_row(conn: sqlite3.Connection, columns: str, receipt_id: str) -> Any:
    """`columns` of the receipt `receipt_id`, or None: by the sequence its ID carries, else
    (an ID from before that) through the index of those older IDs."""
    sequence = id_position("receipt", receipt_id)
    if sequence is not None:
        return conn.execute(
            f"SELECT {columns} FROM receipts WHERE sequence = ? AND receipt_id = ?",
            (sequence, receipt_id),
        ).fetchone()
    return conn.execute(
        f"SELECT {columns} FROM receipts WHERE receipt_id = ? AND {LEGACY_RECEIPT_IDS}",
        (receipt_id,),
    ).fetchone()


# The key look-up and the newest sequence in one statement of two scalar look-ups (fewer
# instructions than the look-up alone selecting every column: a miss, the common case, reads
# no row); a found receipt is then read by its sequence.
_FIND_AND_NEWEST: Final = (
    "SELECT (SELECT sequence FROM receipts"
    " WHERE actor_id = ? AND operation_id = ? AND command_id = ?),"
    " (SELECT max(sequence) FROM receipts)"
)
_BY_SEQUENCE: Final = f"SELECT {_COLUMNS} FROM receipts WHERE sequence = ?"
_BY_KEY: Final = (
    f"SELECT {_COLUMNS} FROM receipts WHERE actor_id = ? AND operation_id = ? AND command_id = ?"
)


def find_receipt(
    conn: sqlite3.Connection, *, actor_id: str, operation_id: str, command_id: str
) -> Receipt | None:
    """The receipt stored under an idempotency key, if any."""
    row = conn.execute(_BY_KEY, (actor_id, operation_id, command_id)).fetchone()
    return None if row is None else Receipt.from_row(row)


def find_receipt_and_next(
    conn: sqlite3.Connection, actor_id: str, operation_id: str, command_id: str
) -> tuple[Receipt | None, int]:
    """`find_receipt`, and the sequence the next receipt gets as things stand."""
    found, newest = conn.execute(_FIND_AND_NEWEST, (actor_id, operation_id, command_id)).fetchone()
    next_sequence = 1 if newest is None else int(newest) + 1
    if found is None:
        return None, next_sequence
    return Receipt.from_row(conn.execute(_BY_SEQUENCE, (found,)).fetchone()), next_sequence


def command_correlation(conn: sqlite3.Connection, target_id: str, operation_id: str) -> str | None:
    """The correlation of the `operation_id` command that first touched `target_id` (the
    turn.send of a turn), or None when no such receipt is kept."""
    row = conn.execute(_CORRELATION_BY_CLAIM, (target_id, operation_id)).fetchone()
    if row is None:  # not made by a claiming mutation, or before receipts were claimed
        row = conn.execute(
            "SELECT correlation_id, command_id FROM receipts"
            " WHERE target_id = ? AND operation_id = ? ORDER BY rowid LIMIT 1",
            (target_id, operation_id),
        ).fetchone()
    return None if row is None else str(row[0] or row[1])


# A receipt found through the row that claimed it (`claim_receipt_target`: a turn's
# `send_receipt`) is that row's only if it names the row first and left `target_id` empty
# for it (a sequence handed out again after every receipt was pruned names something else).
_CLAIMED = "r.target_id IS NULL AND json_extract(r.targets, '$[0].targetId') = t.turn_id"
_CORRELATION_BY_CLAIM: Final = (
    "SELECT r.correlation_id, r.command_id FROM turns t JOIN receipts r"
    f" ON r.sequence = t.send_receipt WHERE t.turn_id = ? AND {_CLAIMED}"
    " AND r.operation_id = ?"
)


def list_receipts(
    conn: sqlite3.Connection,
    *,
    operation_id: str | None = None,
    target_id: str | None = None,
    since_ms: int | None = None,
    until_ms: int | None = None,
    after_sequence: int = 0,
    limit: int = 50,
) -> tuple[Receipt, ...]:
    """Receipts in insertion order after `after_sequence`, filtered; at most `limit` (1-500).

    Time filters are inclusive of `since_ms` and exclusive of `until_ms`. Raises
    `validation_failed` for a bad limit.
    """
    if not 1 <= limit <= 500:
        raise MaiaError("validation_failed", "limit: must be 1-500", {"path": "limit"})
    sql = f"SELECT {_COLUMNS} FROM receipts WHERE rowid > ?"
    args: list[Any] = [after_sequence]
    if operation_id is not None:
        sql += " AND operation_id = ?"
        args.append(operation_id)
    if target_id is not None:
        # The receipts naming it after their first target, by sequence (no index of IDs).
        others = [
            int(found[0])
            for (other,) in conn.execute(
                "SELECT receipt_id FROM receipt_targets WHERE target_id = ?", (target_id,)
            )
            if (found := receipt_row(conn, "sequence", other)) is not None
        ]
        # And the receipt the target's own row claimed (a turn's turn.send).
        others.extend(
            int(found)
            for (found,) in conn.execute(
                "SELECT r.sequence FROM turns t JOIN receipts r ON r.sequence = t.send_receipt"
                f" WHERE t.turn_id = ? AND {_CLAIMED}",
                (target_id,),
            )
        )
        sql += f" AND (target_id = ? OR rowid IN ({', '.join('?' * len(others))}))"
        args.extend((target_id, *others))
    if since_ms is not None:
        sql += " AND created_ms >= ?"
        args.append(since_ms)
    if until_ms is not None:
        sql += " AND created_ms < ?"
        args.append(until_ms)
    sql += " ORDER BY rowid LIMIT ?"
    args.append(limit)
    return tuple(Receipt.from_row(row) for row in conn.execute(sql, args))


def prune_receipts(
    conn: sqlite3.Connection, *, now_ms: int, retain_ms: int = MIN_RECEIPT_RETENTION_MS
) -> int:
    """Delete the oldest receipts (and so their idempotency keys), up to the first one not
    older than `retain_ms`; return the count.

    Receipts are appended in time order, so that is every receipt older than `retain_ms`;
    after a clock that stepped back, one behind a younger receipt stays until that one goes
    (kept longer, never shorter). No index on the time is kept up on each mutation for this:
    the walk in rowid order reads what it deletes and one more row. Raises ValueError for a
    retention under 30 days: keys must outlive every retry.
    """
    if retain_ms < MIN_RECEIPT_RETENTION_MS:
        raise ValueError("receipts and idempotency keys are kept at least 30 days")
    cutoff = now_ms - retain_ms
    row = conn.execute(
        "SELECT rowid FROM receipts WHERE created_ms >= ? ORDER BY rowid LIMIT 1", (cutoff,)
    ).fetchone()
    bound = sys.maxsize if row is None else int(row[0])
    conn.execute(
        "DELETE FROM receipt_targets WHERE receipt_id IN"
        " (SELECT receipt_id FROM receipts WHERE rowid < ?)",
        (bound,),
    )
    return int(conn.execute("DELETE FROM receipts WHERE rowid < ?", (bound,)).rowcount)
