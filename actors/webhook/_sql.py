"""The webhook tables (migration `_WEBHOOKS` in storage/_schema.py): rows in, rows out.

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
import orjson

from actors import EventOwner, Transition

from ._core import DeliveryStatus
from ._table import DeliveryState, WebhookState

MAX_WEBHOOKS: Final = 64  # active or disabled webhooks on one Node
RECENT_DELIVERIES: Final = 20  # what webhooks.show lists
MAX_PENDING_PER_WEBHOOK: Final = 1000  # past it, new deliveries fail with backlog_full

_HOOK_COLUMNS: Final = (
    "webhook_id, url, event_types, project_id, session_id, secret_env, description, state,"
    " state_reason, revision, after_position, created_ms, updated_ms"
)
_DELIVERY_COLUMNS: Final = (
    "delivery_id, webhook_id, seq, message_id, event_id, event_type, state, attempts,"
    " next_attempt_ms, last_status_code, last_reason, redeliveries, created_ms, updated_ms,"
    " finished_ms"
)


@attrs.frozen
class WebhookRecord:
    """One webhook row (the secret's variable name, never its value)."""

    webhook_id: str
    url: str
    event_types: tuple[str, ...]
    project_id: str | None
    session_id: str | None
    secret_env: str
    description: str | None
    state: WebhookState
    state_reason: str | None
    revision: int
    after_position: int
    created_ms: int
    updated_ms: int

    @property
    def id(self) -> str:
        return self.webhook_id

    @classmethod
    def from_row(cls, row: Sequence[Any]) -> WebhookRecord:
        return cls(row[0], row[1], tuple(orjson.loads(row[2])), row[3], row[4], row[5], row[6],
                   WebhookState(row[7]), row[8], row[9], row[10], row[11], row[12])  # fmt: skip

    def matches(self, event_type: str, project_id: str | None, session_id: str | None) -> bool:
        """Whether an event of this type and scope is one this webhook asked for."""
        if event_type not in self.event_types and "*" not in self.event_types:
            return False
        if self.project_id is not None and project_id != self.project_id:
            return False
        return self.session_id is None or session_id == self.session_id


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


class WebhookRows:
    """The runtime's `Rows` for webhooks: insert, compare-and-set update, event owner."""

    resource = "webhook"

    def insert(self, conn: sqlite3.Connection, record: WebhookRecord, now_ms: int) -> None:
        """Insert at the journal's head: only later events are delivered to it."""
        conn.execute(
            f"INSERT INTO webhooks ({_HOOK_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?,"
            " (SELECT coalesce(max(position), 0) FROM events), ?, ?)",
            (record.webhook_id, record.url, orjson.dumps(list(record.event_types)).decode(),
             record.project_id, record.session_id, record.secret_env, record.description,
             record.state.value, record.state_reason, record.revision, now_ms, now_ms),
        )  # fmt: skip

    def update(
        self, conn: sqlite3.Connection, before: WebhookRecord, after: WebhookRecord, now_ms: int
    ) -> bool:
        return conn.execute(
            "UPDATE webhooks SET state = ?, state_reason = ?, revision = ?, updated_ms = ?"
            " WHERE webhook_id = ? AND revision = ?",
            (after.state.value, after.state_reason, after.revision, now_ms, after.webhook_id,
             before.revision),
        ).rowcount == 1  # fmt: skip

    def owner(self, record: WebhookRecord) -> EventOwner:
        return EventOwner(record.webhook_id, "webhook", record.project_id)

    def payload(self, row: Transition[Any, Any], after: WebhookRecord) -> dict[str, Any]:
        body: dict[str, Any] = {"webhookId": after.webhook_id, "state": after.state.value}
        if after.state_reason is not None:
            body["reason"] = after.state_reason
        return body


WEBHOOK_ROWS: Final = WebhookRows()


def get_webhook(conn: sqlite3.Connection, webhook_id: str) -> WebhookRecord | None:
    row = conn.execute(
        f"SELECT {_HOOK_COLUMNS} FROM webhooks WHERE webhook_id = ?", (webhook_id,)
    ).fetchone()
    return None if row is None else WebhookRecord.from_row(row)


def list_webhooks(
    conn: sqlite3.Connection, *, states: Sequence[WebhookState] = (), limit: int = 200
) -> tuple[WebhookRecord, ...]:
    sql = f"SELECT {_HOOK_COLUMNS} FROM webhooks"
    args: list[Any] = []
    if states:
        sql += f" WHERE state IN ({', '.join('?' * len(states))})"
        args += [s.value for s in states]
    rows = conn.execute(sql + " ORDER BY created_ms, webhook_id LIMIT ?", (*args, limit))
    return tuple(WebhookRecord.from_row(r) for r in rows)


def count_live_webhooks(conn: sqlite3.Connection) -> int:
    return int(conn.execute("SELECT count(*) FROM webhooks WHERE state != 'removed'").fetchone()[0])


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


def latest_event(conn: sqlite3.Connection, owner_id: str) -> tuple[str, int]:
    """(event ID, position) of the newest event of `owner_id`."""
    row = conn.execute(
        "SELECT event_id, position FROM events WHERE owner_id = ? ORDER BY owner_seq DESC LIMIT 1",
        (owner_id,),
    ).fetchone()
    return str(row[0]), int(row[1])


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


def recent_deliveries(
    conn: sqlite3.Connection, webhook_id: str, limit: int = RECENT_DELIVERIES
) -> tuple[DeliveryRecord, ...]:
    rows = conn.execute(
        f"SELECT {_DELIVERY_COLUMNS} FROM webhook_deliveries WHERE webhook_id = ?"
        " ORDER BY seq DESC LIMIT ?",
        (webhook_id, limit),
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


def preview_revision(conn: sqlite3.Connection, preview_id: str) -> int | None:
    """The webhook revision a preview bound to its proof (storage's `previews.targets`), or
    None for an unknown preview; the confirm still spends the proof, which checks the rest."""
    row = conn.execute("SELECT targets FROM previews WHERE preview_id = ?", (preview_id,))
    found = row.fetchone()
    if found is None:
        return None
    for target_type, _, revision in orjson.loads(found[0]):
        if target_type == "webhook" and revision is not None:
            return int(revision)
    return None
