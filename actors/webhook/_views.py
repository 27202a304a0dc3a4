"""Webhooks and deliveries as the wire carries them (the shapes of maia/protocol/_ops_webhook).

Built here, not in the service layer, because the confirm's stored result (what a retried
commandId replays) is computed inside the write that applies it.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from maia.core import format_timestamp_ms

from ._deliveries import (
    DeliveryRecord,
    attempts_of,
)
from ._sql import (
    WebhookRecord,
)

MAX_ATTEMPTS_SHOWN = 64


def _when(ms: int | None) -> str | None:
    return None if ms is None else format_timestamp_ms(ms)


def _present(wire: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in wire.items() if v is not None}


def webhook_wire(record: WebhookRecord) -> dict[str, Any]:
    """The `Webhook` object of list, show and the confirm's result."""
    return _present({
        "webhookId": record.webhook_id, "url": record.url,
        "eventTypes": list(record.event_types), "secretEnv": record.secret_env,
        "state": record.state.value, "revision": record.revision,
        "createdAt": format_timestamp_ms(record.created_ms),
        "updatedAt": format_timestamp_ms(record.updated_ms),
        "projectId": record.project_id, "sessionId": record.session_id,
        "description": record.description, "stateReason": record.state_reason,
    })  # fmt: skip


def delivery_wire(conn: sqlite3.Connection, delivery: DeliveryRecord) -> dict[str, Any]:
    """The `WebhookDelivery` object of show, with its newest attempts."""
    s = delivery.status
    log = [_present({"number": a.number, "startedAt": format_timestamp_ms(a.started_ms),
                     "outcome": a.outcome, "finishedAt": _when(a.finished_ms),
                     "statusCode": a.status_code, "reason": a.reason})
           for a in attempts_of(conn, delivery.delivery_id)[-MAX_ATTEMPTS_SHOWN:]]  # fmt: skip
    return _present({
        "deliveryId": delivery.delivery_id, "messageId": delivery.message_id,
        "eventId": delivery.event_id, "eventType": delivery.event_type,
        "state": s.state.value, "attempts": s.attempts,
        "createdAt": format_timestamp_ms(delivery.created_ms),
        "nextAttemptAt": _when(s.next_attempt_ms), "lastStatusCode": s.last_status_code,
        "lastReason": s.last_reason, "finishedAt": _when(s.finished_ms),
        "redeliveries": s.redeliveries, "attemptLog": log,
    })  # fmt: skip
