"""The deliveries outbox and the attempts log (migration `_WEBHOOKS`): rows in, rows out.

Call these inside a `Storage.write` fn (writes) or a `Storage.read` fn (reads), so a webhook's
transition, its event, its receipt and the deliveries it queues commit together.
A delivery's ID and message ID derive from (webhook, event): writing the same delivery twice
is a no-op (`INSERT OR IGNORE`), which makes the outbox processor idempotent.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Sequence
from typing import Any, Final

import attrs

from maia.core import MaiaError

from ._core import DeliveryStatus
from ._table import DeliveryState

RECENT_DELIVERIES: Final = 20  # what webhooks.show lists
MAX_PENDING_PER_WEBHOOK: Final = 1000  # past it, new deliveries fail with backlog_full

_DELIVERY_COLUMNS: Final = (
    "delivery_id, webhook_id, seq, message_id, event_id, event_type, state, attempts,"
    " next_attempt_ms, last_status_code, last_reason, redeliveries, created_ms, updated_ms,"
    " finished_ms"
)


@attrs.frozen
class DeliveryRecord:
    """One delivery row, without its body."""

    delivery_id: str
    webhook_id: str
    seq: int
    message_id: str
    event_id: str
    event_type: str
    status: DeliveryStatus
    created_ms: int
    updated_ms: int

    @classmethod
    def from_row(cls, row: Sequence[Any]) -> DeliveryRecord:
        status = DeliveryStatus(DeliveryState(row[6]), row[7], row[8], row[9], row[10], row[14],
                                row[11])  # fmt: skip
        return cls(row[0], row[1], row[2], row[3], row[4], row[5], status, row[12], row[13])


@attrs.frozen
class AttemptRecord:
    """One attempt of a delivery, as the delivery log shows it."""

    number: int
    started_ms: int
    finished_ms: int | None
    outcome: str
    status_code: int | None
    reason: str | None


def delivery_ids(webhook_id: str, event_id: str) -> tuple[str, str]:
    """(delivery ID, message ID) of the delivery of `event_id` to `webhook_id`."""
    digest = hashlib.sha256(f"{webhook_id}\0{event_id}".encode()).hexdigest()[:32]
    return f"dlv_{digest}", f"msg_{digest}"


def insert_delivery(
    conn: sqlite3.Connection,
    *,
    webhook_id: str,
    seq: int,
    event_id: str,
    event_type: str,
    body: bytes,
    now_ms: int,
    refused_reason: str | None = None,
) -> bool:
    """Queue one delivery (due now), or record it failed with `refused_reason`; returns
    False when it already existed (nothing changed)."""
    delivery_id, message_id = delivery_ids(webhook_id, event_id)
    state = DeliveryState.PENDING if refused_reason is None else DeliveryState.FAILED
    cursor = conn.execute(
        "INSERT OR IGNORE INTO webhook_deliveries (delivery_id, webhook_id, seq, message_id,"
        " event_id, event_type, body, state, next_attempt_ms, last_reason, created_ms,"
        " updated_ms, finished_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (delivery_id, webhook_id, seq, message_id, event_id, event_type, body, state.value,
         now_ms if refused_reason is None else None, refused_reason, now_ms, now_ms,
         None if refused_reason is None else now_ms),
    )  # fmt: skip
    return cursor.rowcount == 1


def get_delivery(conn: sqlite3.Connection, delivery_id: str) -> DeliveryRecord | None:
    row = conn.execute(
        f"SELECT {_DELIVERY_COLUMNS} FROM webhook_deliveries WHERE delivery_id = ?",
        (delivery_id,),
    ).fetchone()
    return None if row is None else DeliveryRecord.from_row(row)


def delivery_body_of(conn: sqlite3.Connection, delivery_id: str) -> bytes:
    row = conn.execute(
        "SELECT body FROM webhook_deliveries WHERE delivery_id = ?", (delivery_id,)
    ).fetchone()
    return bytes(row[0])


def webhooks_with_pending(conn: sqlite3.Connection) -> tuple[str, ...]:
    """Active webhooks with a pending delivery (woken when the Node starts)."""
    rows = conn.execute(
        "SELECT DISTINCT d.webhook_id FROM webhook_deliveries d JOIN webhooks w"
        " ON w.webhook_id = d.webhook_id WHERE d.state = 'pending' AND w.state = 'active'"
    )
    return tuple(r[0] for r in rows)


def next_pending(conn: sqlite3.Connection, webhook_id: str) -> DeliveryRecord | None:
    """The webhook's pending delivery due first (then in order of first attempt)."""
    row = conn.execute(
        f"SELECT {_DELIVERY_COLUMNS} FROM webhook_deliveries WHERE webhook_id = ?"
        " AND state = 'pending' ORDER BY next_attempt_ms, seq LIMIT 1",
        (webhook_id,),
    ).fetchone()
    return None if row is None else DeliveryRecord.from_row(row)


def count_pending(conn: sqlite3.Connection, webhook_id: str) -> int:
    return int(
        conn.execute(
            "SELECT count(*) FROM webhook_deliveries WHERE webhook_id = ? AND state = 'pending'",
            (webhook_id,),
        ).fetchone()[0]
    )


def require_backlog_room(conn: sqlite3.Connection, webhook_id: str) -> None:
    """Raises MaiaError `invalid_state` (details.state `backlog_full`) when the webhook
    already has MAX_PENDING_PER_WEBHOOK pending deliveries: a redeliver would pass the
    bound the outbox keeps for new deliveries."""
    if count_pending(conn, webhook_id) >= MAX_PENDING_PER_WEBHOOK:
        raise MaiaError(
            "invalid_state",
            f"webhook {webhook_id} has {MAX_PENDING_PER_WEBHOOK} pending deliveries; "
            "redeliver once its receiver has taken some",
            {"resource": "webhook", "id": webhook_id, "state": "backlog_full",
             "limit": MAX_PENDING_PER_WEBHOOK},
        )  # fmt: skip


def recent_deliveries(
    conn: sqlite3.Connection,
    webhook_id: str,
    limit: int = RECENT_DELIVERIES,
    *,
    state: str | None = None,
    before: int | None = None,
) -> tuple[DeliveryRecord, ...]:
    """The webhook's deliveries newest first (by `seq`, its order of first attempts), only in
    `state` when given, only older than `seq` `before` when given (webhooks.show's pages)."""
    where: list[str] = ["webhook_id = ?"]
    args: list[Any] = [webhook_id]
    if state is not None:
        where.append("state = ?")
        args.append(state)
    if before is not None:
        where.append("seq < ?")
        args.append(before)
    rows = conn.execute(
        f"SELECT {_DELIVERY_COLUMNS} FROM webhook_deliveries WHERE {' AND '.join(where)}"
        " ORDER BY seq DESC LIMIT ?",
        (*args, limit),
    )
    return tuple(DeliveryRecord.from_row(r) for r in rows)


def save_status(
    conn: sqlite3.Connection, delivery_id: str, status: DeliveryStatus, now_ms: int
) -> None:
    conn.execute(
        "UPDATE webhook_deliveries SET state = ?, attempts = ?, next_attempt_ms = ?,"
        " last_status_code = ?, last_reason = ?, redeliveries = ?, finished_ms = ?,"
        " updated_ms = ? WHERE delivery_id = ?",
        (status.state.value, status.attempts, status.next_attempt_ms, status.last_status_code,
         status.last_reason, status.redeliveries, status.finished_ms, now_ms, delivery_id),
    )  # fmt: skip


def pending_of(conn: sqlite3.Connection, webhook_id: str) -> tuple[DeliveryRecord, ...]:
    rows = conn.execute(
        f"SELECT {_DELIVERY_COLUMNS} FROM webhook_deliveries WHERE webhook_id = ?"
        " AND state = 'pending'",
        (webhook_id,),
    )
    return tuple(DeliveryRecord.from_row(r) for r in rows)


def start_attempt(conn: sqlite3.Connection, delivery_id: str, now_ms: int) -> int:
    """Record an attempt as in flight; returns its number (1.. over the delivery's life)."""
    number = conn.execute(
        "SELECT coalesce(max(number), 0) + 1 FROM webhook_attempts WHERE delivery_id = ?",
        (delivery_id,),
    ).fetchone()[0]
    conn.execute(
        "INSERT INTO webhook_attempts (delivery_id, number, started_ms, outcome)"
        " VALUES (?, ?, ?, 'sending')",
        (delivery_id, number, now_ms),
    )
    return int(number)


def finish_attempt(
    conn: sqlite3.Connection,
    delivery_id: str,
    number: int,
    *,
    outcome: str,
    status_code: int | None,
    reason: str | None,
    now_ms: int,
) -> None:
    conn.execute(
        "UPDATE webhook_attempts SET finished_ms = ?, outcome = ?, status_code = ?, reason = ?"
        " WHERE delivery_id = ? AND number = ?",
        (now_ms, outcome, status_code, reason, delivery_id, number),
    )


def interrupted_attempts(conn: sqlite3.Connection, now_ms: int) -> int:
    """After a restart: attempts still in flight ended with the Node (outcome unknown: the
    receiver may have got it). Their deliveries stay pending, due as they were."""
    return int(
        conn.execute(
            "UPDATE webhook_attempts SET outcome = 'unknown', finished_ms = ?,"
            " reason = 'the Node stopped during the attempt' WHERE outcome = 'sending'",
            (now_ms,),
        ).rowcount
    )


def attempts_of(conn: sqlite3.Connection, delivery_id: str) -> tuple[AttemptRecord, ...]:
    rows = conn.execute(
        "SELECT number, started_ms, finished_ms, outcome, status_code, reason"
        " FROM webhook_attempts WHERE delivery_id = ? ORDER BY number",
        (delivery_id,),
    )
    return tuple(AttemptRecord(*r) for r in rows)
