"""The two lifecycles of webhooks, as transition tables: the webhook and one delivery.

Webhook: created `active` by `add` (the creation row); an `active` webhook takes `remove`,
`test` and `redeliver` from an operator (each names its expected revision and leaves a
receipt) and `gone` from the Node when a receiver answers 410; `disabled` only takes `remove`;
`removed` is terminal. `test` and `redeliver` keep the webhook active but are still its
transitions: they bump its revision, so a preview made before them is stale.

Delivery: `pending` until an attempt succeeds (`succeeded`), the schedule is spent or the
receiver is gone (`failed`), or its webhook is removed or disabled (`cancelled`, terminal).
A failed attempt with retries left stays `pending` with its next attempt time. An operator's
`redeliver` queues a `succeeded` or `failed` delivery again, with the same message ID.
Callers: `client` (an API request by the operator), `node` (the Node itself).
"""

from __future__ import annotations

import enum

from actors._table import CLIENT, NODE, TransitionTable, creation, row

__all__ = ["CLIENT", "NODE"]


class WebhookState(enum.Enum):
    ACTIVE = "active"
    DISABLED = "disabled"
    REMOVED = "removed"


class WebhookEvent(enum.Enum):
    ADD = "add"
    REMOVE = "remove"
    TEST = "test"
    REDELIVER = "redeliver"
    GONE = "gone"  # a receiver answered 410


class DeliveryState(enum.Enum):
    PENDING = "pending"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"


class DeliveryEvent(enum.Enum):
    SUCCEEDED = "attempt.succeeded"  # a 2xx
    RETRY = "attempt.failed"  # failed, retries left
    EXHAUSTED = "attempt.exhausted"  # failed, the schedule is spent
    GONE = "attempt.gone"  # 410
    CANCEL = "cancel"  # its webhook was removed or disabled
    REDELIVER = "redeliver"


def _webhook_table() -> TransitionTable[WebhookState, WebhookEvent]:
    s, e = WebhookState, WebhookEvent
    return TransitionTable(
        "webhook",
        states=WebhookState,
        events=WebhookEvent,
        initial=s.ACTIVE,
        terminal=(s.REMOVED,),
        create=creation(e.ADD, s.ACTIVE, CLIENT, emits="webhook.added", receipt=True),
        rows=[
            row(s.ACTIVE, e.REMOVE, s.REMOVED, CLIENT, emits="webhook.removed", receipt=True,
                expects_revision=True),
            row(s.ACTIVE, e.TEST, s.ACTIVE, CLIENT, emits="webhook.tested", receipt=True,
                expects_revision=True),
            row(s.ACTIVE, e.REDELIVER, s.ACTIVE, CLIENT, emits="webhook.redelivery_requested",
                receipt=True, expects_revision=True),
            row(s.ACTIVE, e.GONE, s.DISABLED, NODE, emits="webhook.disabled"),
            row(s.DISABLED, e.REMOVE, s.REMOVED, CLIENT, emits="webhook.removed", receipt=True,
                expects_revision=True),
        ],
    )  # fmt: skip


def _delivery_table() -> TransitionTable[DeliveryState, DeliveryEvent]:
    s, e = DeliveryState, DeliveryEvent
    return TransitionTable(
        "delivery",
        states=DeliveryState,
        events=DeliveryEvent,
        initial=s.PENDING,
        terminal=(s.CANCELLED,),
        rows=[
            row(s.PENDING, e.SUCCEEDED, s.SUCCEEDED, NODE),
            row(s.PENDING, e.RETRY, s.PENDING, NODE),
            row(s.PENDING, e.EXHAUSTED, s.FAILED, NODE),
            row(s.PENDING, e.GONE, s.FAILED, NODE),
            row(s.PENDING, e.CANCEL, s.CANCELLED, NODE),
            row(s.SUCCEEDED, e.REDELIVER, s.PENDING, CLIENT),
            row(s.FAILED, e.REDELIVER, s.PENDING, CLIENT),
        ],
    )  # fmt: skip


WEBHOOK_TABLE = _webhook_table()
DELIVERY_TABLE = _delivery_table()
