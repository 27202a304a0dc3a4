"""The webhook's transitions written to storage: each is one function run inside the write
transaction of its mutation (or, for `gone`, of the Node's own write), so the webhook's new
state, its event, the deliveries it queues or cancels and the receipt commit together.

Every function first asks the webhook table (`_table.WEBHOOK_TABLE.step`) whether the
transition applies, with the caller and the expected revision, so no rule is decided here.
A webhook's ID derives from the actor and the add's commandId, so the preview can name it and
a retried add names the same webhook.
"""

from __future__ import annotations

import hashlib
import sqlite3
from typing import Any, Final

import attrs

from maia.core import MaiaError
from storage import ReceiptTarget, append_event

from ._core import DeliveryStatus, cancel, redeliver
from ._signing import delivery_body
from ._sql import (
    MAX_WEBHOOKS,
    WebhookRecord,
    count_live_webhooks,
    delivery_ids,
    get_delivery,
    get_webhook,
    insert_delivery,
    insert_webhook,
    pending_of,
    save_status,
    set_webhook_state,
)
from ._table import CLIENT, NODE, WEBHOOK_TABLE, WebhookEvent, WebhookState

TARGET_TYPE: Final = "webhook"
PING_EVENT_TYPE: Final = "maia.ping"


@attrs.frozen
class WebhookSpec:
    """What an add names: `{url, eventTypes, projectId?, sessionId?, secretEnv, description?}`."""

    url: str
    event_types: tuple[str, ...]
    secret_env: str
    project_id: str | None = None
    session_id: str | None = None
    description: str | None = None


@attrs.frozen
class Changed:
    """A transition's outcome: the webhook after it, its event, its receipt target, and the
    delivery it queued (test, redeliver)."""

    webhook: WebhookRecord
    event_id: str
    target: ReceiptTarget
    delivery_id: str | None = None


def webhook_id_for(actor_id: str, command_id: str) -> str:
    """`hook_` + 32 hex derived from the actor and the add's commandId."""
    return "hook_" + hashlib.sha256(f"{actor_id}\0{command_id}".encode()).hexdigest()[:32]


def not_found(resource: str, row_id: str) -> MaiaError:
    return MaiaError(
        "resource_not_found",
        f"{resource} {row_id} does not exist",
        {"resource": resource, "id": row_id},
    )


def require_webhook(conn: sqlite3.Connection, webhook_id: str) -> WebhookRecord:
    """Raises `resource_not_found`."""
    record = get_webhook(conn, webhook_id)
    if record is None:
        raise not_found("webhook", webhook_id)
    return record


def _event(conn: sqlite3.Connection, record: WebhookRecord, event_type: str, now_ms: int,
           actor_id: str, payload: dict[str, Any]) -> Any:  # fmt: skip
    return append_event(
        conn, owner_id=record.webhook_id, owner_type=TARGET_TYPE, event_type=event_type,
        payload={"webhookId": record.webhook_id, **payload}, now_ms=now_ms,
        aggregate_revision=record.revision, project_id=record.project_id, actor_id=actor_id,
    )  # fmt: skip


def add_webhook(
    conn: sqlite3.Connection, webhook_id: str, spec: WebhookSpec, now_ms: int, actor_id: str
) -> Changed:
    """Store a new active webhook at revision 1. Raises `webhook_limit_reached`,
    `invalid_state` (the ID exists: another command made it)."""
    existing = get_webhook(conn, webhook_id)
    WEBHOOK_TABLE.step(
        existing.state if existing else WebhookState.NEW, WebhookEvent.ADD, caller=CLIENT,
        aggregate_id=webhook_id,
    )  # fmt: skip
    if count_live_webhooks(conn) >= MAX_WEBHOOKS:
        raise MaiaError(
            "webhook_limit_reached",
            f"the Node has {MAX_WEBHOOKS} webhooks; remove one first",
            {"limit": MAX_WEBHOOKS},
        )
    head = conn.execute("SELECT coalesce(max(position), 0) FROM events").fetchone()[0]
    record = WebhookRecord(
        webhook_id, spec.url, spec.event_types, spec.project_id, spec.session_id,
        spec.secret_env, spec.description, WebhookState.ACTIVE, None, 1, int(head), now_ms,
        now_ms,
    )  # fmt: skip
    event = _event(conn, record, "webhook.added", now_ms, actor_id, {"url": spec.url,
                   "eventTypes": list(spec.event_types)})  # fmt: skip
    # Deliver what follows the add's own event (a processor that lags still starts there).
    record = attrs.evolve(record, after_position=event.position)
    insert_webhook(conn, record)
    return Changed(record, event.event_id, ReceiptTarget(TARGET_TYPE, webhook_id, "created",
                   None, 1))  # fmt: skip


def _step(
    conn: sqlite3.Connection, record: WebhookRecord, event: WebhookEvent, caller: str,
    expected_revision: int | None, now_ms: int, actor_id: str, reason: str | None = None,
) -> tuple[WebhookRecord, str]:  # fmt: skip
    found = WEBHOOK_TABLE.step(
        record.state, event, caller=caller, aggregate_id=record.webhook_id,
        expected_revision=expected_revision, revision=record.revision,
    )  # fmt: skip
    after = attrs.evolve(record, state=found.target, revision=record.revision + 1,
                         state_reason=reason, updated_ms=now_ms)  # fmt: skip
    set_webhook_state(conn, record.webhook_id, state=after.state, reason=reason,
                      revision=after.revision, now_ms=now_ms)  # fmt: skip
    assert found.emits is not None
    written = _event(conn, after, found.emits, now_ms, actor_id, {"state": after.state.value})
    if after.state is not WebhookState.ACTIVE:
        for delivery in pending_of(conn, record.webhook_id):
            cancelled = cancel(delivery.status, now_ms, f"webhook {after.state.value}")
            if cancelled is not None:
                save_status(conn, delivery.delivery_id, cancelled, now_ms)
    return after, written.event_id


def _target(before: WebhookRecord, after: WebhookRecord, disposition: str) -> ReceiptTarget:
    return ReceiptTarget(TARGET_TYPE, after.webhook_id, disposition, before.revision,
                         after.revision)  # fmt: skip


def remove_webhook(conn: sqlite3.Connection, webhook_id: str, expected_revision: int,
                   now_ms: int, actor_id: str) -> Changed:  # fmt: skip
    """Remove it (its pending deliveries are cancelled). Raises `resource_not_found`,
    `revision_conflict`, `invalid_state`."""
    before = require_webhook(conn, webhook_id)
    after, event_id = _step(conn, before, WebhookEvent.REMOVE, CLIENT, expected_revision,
                            now_ms, actor_id, "removed by the operator")  # fmt: skip
    return Changed(after, event_id, _target(before, after, "deleted"))


def ping_webhook(conn: sqlite3.Connection, webhook_id: str, expected_revision: int,
                 now_ms: int, actor_id: str) -> Changed:  # fmt: skip
    """Queue a `maia.ping` delivery. Raises `resource_not_found`, `revision_conflict`,
    `invalid_state` (not active)."""
    before = require_webhook(conn, webhook_id)
    after, event_id = _step(conn, before, WebhookEvent.TEST, CLIENT, expected_revision,
                            now_ms, actor_id)  # fmt: skip
    body = delivery_body(PING_EVENT_TYPE, now_ms, {"webhookId": webhook_id, "eventId": event_id,
                         "revision": after.revision})  # fmt: skip
    position = conn.execute("SELECT position FROM events WHERE event_id = ?", (event_id,))
    insert_delivery(conn, webhook_id=webhook_id, seq=position.fetchone()[0], event_id=event_id,
                    event_type=PING_EVENT_TYPE, body=body, now_ms=now_ms)  # fmt: skip
    return Changed(after, event_id, _target(before, after, "updated"),
                   delivery_ids(webhook_id, event_id)[0])  # fmt: skip


def redeliver_delivery(conn: sqlite3.Connection, delivery_id: str, expected_revision: int,
                       now_ms: int, actor_id: str) -> Changed:  # fmt: skip
    """Queue a finished delivery again (same message ID, new round of the schedule).
    Raises `resource_not_found`, `revision_conflict` (the webhook's), `invalid_state`."""
    delivery = get_delivery(conn, delivery_id)
    if delivery is None:
        raise not_found("delivery", delivery_id)
    before = require_webhook(conn, delivery.webhook_id)
    WEBHOOK_TABLE.step(before.state, WebhookEvent.REDELIVER, caller=CLIENT,
                       aggregate_id=before.webhook_id, expected_revision=expected_revision,
                       revision=before.revision)  # fmt: skip
    queued: DeliveryStatus = redeliver(delivery.status, now_ms, CLIENT)
    save_status(conn, delivery_id, queued, now_ms)
    after, event_id = _step(conn, before, WebhookEvent.REDELIVER, CLIENT, expected_revision,
                            now_ms, actor_id)  # fmt: skip
    return Changed(after, event_id, _target(before, after, "updated"), delivery_id)


def disable_gone(conn: sqlite3.Connection, webhook_id: str, reason: str, now_ms: int,
                 actor_id: str) -> WebhookRecord | None:  # fmt: skip
    """The Node's transition on a 410: disable the webhook, cancel what it had pending;
    None when it is no longer active (removed meanwhile)."""
    before = require_webhook(conn, webhook_id)
    if WEBHOOK_TABLE.get(before.state, WebhookEvent.GONE) is None:
        return None
    after, _ = _step(conn, before, WebhookEvent.GONE, NODE, None, now_ms, actor_id, reason)
    return after
