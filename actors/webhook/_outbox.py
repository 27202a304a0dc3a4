"""The webhook outbox processor: journal events in, delivery rows out, checkpoint advanced.

A journal processor in the spec's sense (ObservationProcessorCheckpointV1): `process_batch`
runs inside one `Storage.write` fn, reads up to 128 events after its checkpoint, writes a
delivery row for each (webhook, matching event) and moves the checkpoint to the last event it
read, in that one transaction. So:
  * at least once: a crash before the commit leaves the checkpoint where it was, and the batch
    is read again; a delivery row derives its ID from (webhook, event) and is inserted with
    `INSERT OR IGNORE`, so a second run writes nothing twice (idempotent by processor,
    partition and sequence: the sequence is the journal position);
  * nothing for an event that never committed: the processor reads through the writer's own
    connection, so an event it sees either commits with the deliveries or rolls back with them.
A webhook receives the events after the journal position at which it was added, of the types
it names (`*`: every type), in its Project or Session when it names one. Events owned by
webhooks themselves and events classified `sensitive` are never delivered.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence
from typing import Any, Final

import attrs
import orjson

from ._deliveries import (
    MAX_PENDING_PER_WEBHOOK,
    count_pending,
    insert_delivery,
)
from ._signing import delivery_body
from ._sql import (
    WebhookRecord,
    list_webhooks,
)
from ._table import WebhookState

PROCESSOR_ID: Final = "webhooks.outbox"
PROCESSOR_VERSION: Final = "1"
PARTITION: Final = 0
INPUT_SCHEMA_DIGEST: Final = "maia.event.v1"
MAX_BATCH_RECORDS: Final = 128
# Deliveries one batch may write (events × active webhooks): the write holds the Node's trio
# thread while it runs (docs/storage.md), ~400 ms for 128 events × 64 webhooks; 512 is ~25 ms.
MAX_BATCH_DELIVERIES: Final = 512
MAX_BODY_BYTES: Final = 256 * 1024


@attrs.frozen
class Checkpoint:
    acknowledged_sequence: int
    projection_revision: int


@attrs.frozen
class ProcessedBatch:
    """What one batch did: events read, deliveries written per webhook, where it stopped."""

    events_read: int
    written: Mapping[str, int]
    acknowledged: int
    more: bool  # the batch was full: call again


def read_checkpoint(conn: sqlite3.Connection) -> Checkpoint:
    row = conn.execute(
        "SELECT acknowledged_sequence, projection_revision FROM processor_checkpoints"
        " WHERE processor_id = ? AND partition_id = ?",
        (PROCESSOR_ID, PARTITION),
    ).fetchone()
    return Checkpoint(0, 0) if row is None else Checkpoint(int(row[0]), int(row[1]))


def outbox_watermark(conn: sqlite3.Connection) -> int:
    """The last journal position the outbox has processed: journal retention must not prune
    past it (spec: the outbox catches up before retention advances its watermark)."""
    return read_checkpoint(conn).acknowledged_sequence


def _advance(conn: sqlite3.Connection, old: Checkpoint, position: int, now_ms: int) -> None:
    conn.execute(
        "INSERT INTO processor_checkpoints (processor_id, partition_id, processor_version,"
        " acknowledged_sequence, input_schema_digest, projection_revision, state, updated_ms)"
        " VALUES (?, ?, ?, ?, ?, ?, 'running', ?) ON CONFLICT (processor_id, partition_id)"
        " DO UPDATE SET acknowledged_sequence = excluded.acknowledged_sequence,"
        " projection_revision = excluded.projection_revision, updated_ms = excluded.updated_ms",
        (PROCESSOR_ID, PARTITION, PROCESSOR_VERSION, position, INPUT_SCHEMA_DIGEST,
         old.projection_revision + 1, now_ms),
    )  # fmt: skip


def event_body(row: Sequence[Any]) -> bytes:
    """The delivery body of a journal row (position, event_id, type, owner_type, owner_id,
    owner_seq, revision, project, session, occurred_ms, payload text); a payload that would
    make the body larger than 256 KiB is replaced by `{"truncated": true}`."""
    (_, event_id, event_type, owner_type, owner_id, owner_seq, revision, project, session,
     occurred_ms, payload) = row  # fmt: skip
    data: dict[str, Any] = {
        "eventId": event_id,
        "ownerType": owner_type,
        "ownerId": owner_id,
        "ownerSequence": owner_seq,
        "aggregateRevision": revision,
        "projectId": project,
        "sessionId": session,
        "payload": orjson.Fragment(payload),
    }
    body = delivery_body(event_type, occurred_ms, data)
    if len(body) > MAX_BODY_BYTES:
        data["payload"] = {"truncated": True}
        body = delivery_body(event_type, occurred_ms, data)
    return body


def process_batch(
    conn: sqlite3.Connection, now_ms: int, limit: int = MAX_BATCH_RECORDS
) -> ProcessedBatch:
    """One batch of the processor (inside a write transaction). Never raises for an event."""
    checkpoint = read_checkpoint(conn)
    hooks = list_webhooks(conn, states=(WebhookState.ACTIVE,))
    if not hooks:  # nothing to deliver to: skip to the head of the journal
        head = conn.execute("SELECT coalesce(max(position), 0) FROM events").fetchone()[0]
        if head != checkpoint.acknowledged_sequence:
            _advance(conn, checkpoint, int(head), now_ms)
        return ProcessedBatch(0, {}, int(head), False)
    limit = min(limit, max(1, MAX_BATCH_DELIVERIES // len(hooks)))
    start = max(checkpoint.acknowledged_sequence, min(h.after_position for h in hooks))
    rows = conn.execute(
        "SELECT position, event_id, event_type, owner_type, owner_id, owner_seq,"
        " aggregate_revision, project_id, session_id, occurred_ms, payload, classification"
        " FROM events"
        " WHERE position > ? ORDER BY position LIMIT ?",
        (start, limit),
    ).fetchall()
    written = _write_deliveries(conn, hooks, rows, now_ms)
    last = rows[-1][0] if rows else start
    if last != checkpoint.acknowledged_sequence:
        _advance(conn, checkpoint, last, now_ms)
    return ProcessedBatch(len(rows), written, last, len(rows) == limit)


def _write_deliveries(
    conn: sqlite3.Connection, hooks: Sequence[WebhookRecord], rows: list[Any], now_ms: int
) -> dict[str, int]:
    written: dict[str, int] = {}
    backlog = {h.webhook_id: count_pending(conn, h.webhook_id) for h in hooks}
    for row in rows:
        position, event_id, event_type, owner_type, _, _, _, project, session = row[:9]
        if owner_type == "webhook" or row[11] == "sensitive":
            continue
        for hook in hooks:
            if position <= hook.after_position or not hook.matches(event_type, project, session):
                continue
            full = backlog[hook.webhook_id] >= MAX_PENDING_PER_WEBHOOK
            if insert_delivery(
                conn, webhook_id=hook.webhook_id, seq=position, event_id=event_id,
                event_type=event_type, body=event_body(row[:11]), now_ms=now_ms,
                refused_reason="backlog_full" if full else None,
            ):  # fmt: skip
                written[hook.webhook_id] = written.get(hook.webhook_id, 0) + 1
                backlog[hook.webhook_id] += 0 if full else 1
    return written
