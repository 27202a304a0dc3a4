"""Webhook operations (spec: Webhook operations): a change previews, then confirms; list and
show read. All four are operator-only (`local-user`; a Session credential is refused).

The change is a union on `kind`: `add {spec}`, `remove`/`test {webhookId, expectedRevision}`,
`redeliver {deliveryId, expectedRevision}` (the revision of the webhook that owns the
delivery). `expectedRevision` may be left out: the preview then binds the revision it read
to its proof, and the confirm compares that one. The preview binds the action, the input
digest, the actor, the webhook's revision and the destination, and returns a one-time proof;
the confirm repeats the input with the digest, the preview and the proof, compares the
revision and commits in one transaction.
Its effect class is external-uncertain: what a receiver did with a delivery is not known.
"""

# ruff: noqa: RUF009  (field() returns attrs.field: a field definition, not a shared default)

from __future__ import annotations

from typing import Any, Literal

import attrs

from maia.core._fields import field, spec
from maia.core._limits import PAGE_LIMIT_MAX

from ._common import (
    Delivery,
    command_id_field,
    count_field,
    cursor_field,
    digest_field,
    id_field,
    mutation,
    operation,
    revision_field,
    timestamp_field,
)

WEBHOOK_ID_PATTERN = r"^hook_[a-f0-9]{32}$"
EVENT_TYPE_PATTERN = r"^(\*|[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+)$"
ENV_NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]{0,127}$"
MAX_EVENT_TYPES = 32
MAX_URL_LENGTH = 2048
WebhookState = Literal["active", "disabled", "removed"]
DeliveryState = Literal["pending", "succeeded", "failed", "cancelled"]
AttemptOutcome = Literal["sending", "succeeded", "failed", "gone", "unknown"]
ChangeKind = Literal["add", "remove", "test", "redeliver"]


def webhook_id_field(doc: str = "The webhook.", **kwargs: Any) -> Any:
    return field(doc=doc, pattern=WEBHOOK_ID_PATTERN, pattern_doc="must be hook_ and 32 hex",
                 **kwargs)  # fmt: skip


@attrs.frozen
class WebhookSpec:
    """What a webhook delivers, where, and the variable holding its secret."""

    url: str = field(doc="http or https URL of the receiver (checked by the SSRF rules).",
                     min_length=1, max_length=MAX_URL_LENGTH)  # fmt: skip
    event_types: tuple[str, ...] = field(
        doc="Event types to deliver (* for every type), e.g. turn.completed.",
        min_items=1,
        max_items=MAX_EVENT_TYPES,
        items=spec(max_length=128, pattern=EVENT_TYPE_PATTERN,
                   pattern_doc="must be an event type like turn.completed, or *"),
    )  # fmt: skip
    secret_env: str = field(
        doc="Name of the Node's environment variable holding the whsec_ secret (never the value).",
        pattern=ENV_NAME_PATTERN,
        pattern_doc="must be an environment variable name",
    )
    project_id: str | None = id_field("Only this Project's events.", default=None)
    session_id: str | None = id_field("Only this Session's events.", default=None)
    description: str | None = field(doc="For people.", default=None, max_length=256)


@attrs.frozen
class WebhookAddChange:
    """Add a webhook."""

    kind: Literal["add"] = field(doc="add.")
    spec: WebhookSpec = field(doc="The webhook.")


@attrs.frozen
class WebhookRemoveChange:
    """Remove a webhook (its pending deliveries are cancelled)."""

    kind: Literal["remove"] = field(doc="remove.")
    webhook_id: str = webhook_id_field()
    expected_revision: int | None = revision_field(
        "The webhook's revision (default: the one the preview read, bound by its proof).",
        default=None,
    )


@attrs.frozen
class WebhookTestChange:
    """Send the webhook a maia.ping delivery."""

    kind: Literal["test"] = field(doc="test.")
    webhook_id: str = webhook_id_field()
    expected_revision: int | None = revision_field(
        "The webhook's revision (default: the one the preview read, bound by its proof).",
        default=None,
    )


@attrs.frozen
class WebhookRedeliverChange:
    """Queue one delivery again (same webhook-id, a new round of the retry schedule)."""

    kind: Literal["redeliver"] = field(doc="redeliver.")
    delivery_id: str = id_field("The delivery.")
    expected_revision: int | None = revision_field(
        "The revision of the webhook that owns it (default: the one the preview read).",
        default=None,
    )


WebhookChange = WebhookAddChange | WebhookRemoveChange | WebhookTestChange | WebhookRedeliverChange


@attrs.frozen
class WebhookChangePreviewInput:
    """Preview a webhook change."""

    command_id: str = command_id_field()
    change: WebhookChange = field(doc="The change, by kind.")


@attrs.frozen
class WebhookChangePreviewOutput:
    """What the change will do, and the proof its confirm must carry."""

    action: ChangeKind = field(doc="The change's kind.")
    webhook_id: str = webhook_id_field("The webhook it changes (for add: the one it creates).")
    url: str = field(doc="The destination.", max_length=MAX_URL_LENGTH)
    input_digest: str = digest_field("sha256 of the normalized change.")
    preview_id: str = id_field("The preview.")
    proof: str = field(doc="One-time proof for the confirm.", min_length=1, max_length=128)
    expires_at: str = timestamp_field("When the proof expires.")
    revision: int | None = revision_field("The webhook's revision now (none for add).",
                                          default=None)  # fmt: skip
    delivery_id: str | None = id_field("The delivery to redeliver.", default=None)


@attrs.frozen
class WebhookChangeConfirmInput:
    """Confirm a previewed webhook change."""

    command_id: str = command_id_field()
    change: WebhookChange = field(doc="The change, as previewed.")
    input_digest: str | None = digest_field("From the preview (the CLI fills it).", default=None)
    preview_id: str | None = id_field("From the preview (the CLI fills it).", default=None)
    proof: str | None = field(doc="From the preview (the CLI fills it).", default=None,
                              min_length=1, max_length=128)  # fmt: skip


@attrs.frozen
class Webhook:
    """A webhook as list and show return it."""

    webhook_id: str = webhook_id_field("The webhook's ID.")
    url: str = field(doc="The receiver.", max_length=MAX_URL_LENGTH)
    event_types: tuple[str, ...] = field(doc="Event types delivered.", max_items=MAX_EVENT_TYPES)
    secret_env: str = field(doc="The variable holding the secret.", pattern=ENV_NAME_PATTERN)
    state: WebhookState = field(doc="active, disabled (a receiver answered 410) or removed.")
    revision: int = revision_field("The webhook's revision.")
    created_at: str = timestamp_field("When it was added.")
    updated_at: str = timestamp_field("When it last changed.")
    project_id: str | None = id_field("Only this Project's events.", default=None)
    session_id: str | None = id_field("Only this Session's events.", default=None)
    description: str | None = field(doc="For people.", default=None, max_length=256)
    state_reason: str | None = field(doc="Why it is disabled or removed.", default=None)


@attrs.frozen
class WebhookChangeConfirmOutput:
    """The webhook after the change, and the delivery it queued (test, redeliver)."""

    delivery: Delivery = field(doc="new, or duplicate for a retried commandId.")
    receipt_id: str = id_field("The command's receipt.")
    webhook: Webhook = field(doc="The webhook after the change.")
    delivery_id: str | None = id_field("The delivery queued.", default=None)


@attrs.frozen
class WebhookListInput:
    """Which webhooks to list, one page at a time."""

    include_removed: bool = field(doc="Also list removed webhooks.", default=False)
    limit: int = field(doc="Page size (the default holds every live webhook).",
                       default=PAGE_LIMIT_MAX, minimum=1, maximum=PAGE_LIMIT_MAX)  # fmt: skip
    cursor: str | None = cursor_field()


@attrs.frozen
class WebhookListOutput:
    """The webhooks, oldest first; a page is cut under the 1 MiB frame (`nextCursor`)."""

    webhooks: tuple[Webhook, ...] = field(doc="The page.", max_items=PAGE_LIMIT_MAX)
    next_cursor: str | None = field(doc="Cursor of the next page; null on the last.")


@attrs.frozen
class WebhookShowInput:
    """Names one webhook, and which of its deliveries to show (newest first, a page of 20)."""

    webhook_id: str = webhook_id_field()
    delivery_state: DeliveryState | None = field(
        doc="Only deliveries in this state (failed: the ones a redeliver may want).",
        default=None,
    )
    cursor: str | None = cursor_field("The previous page's nextCursor: older deliveries.")


@attrs.frozen
class WebhookAttempt:
    """One attempt of a delivery."""

    number: int = revision_field("1, 2, ... over the delivery's life.")
    started_at: str = timestamp_field("When it was sent.")
    outcome: AttemptOutcome = field(doc="unknown: the Node stopped before the answer.")
    finished_at: str | None = timestamp_field("When it ended.", default=None)
    status_code: int | None = field(doc="The receiver's HTTP status.", default=None)
    reason: str | None = field(doc="Why it failed.", default=None, max_length=512)


@attrs.frozen
class WebhookDelivery:
    """A delivery: one event for one webhook, and its attempts."""

    delivery_id: str = id_field("The delivery.")
    message_id: str = id_field("The webhook-id header: the same on every attempt.")
    event_id: str = id_field("The event delivered.")
    event_type: str = field(doc="Its type (maia.ping for a test).")
    state: DeliveryState = field(doc="pending, succeeded, failed or cancelled.")
    attempts: int = count_field("Attempts in this round.")
    created_at: str = timestamp_field("When it was queued.")
    next_attempt_at: str | None = timestamp_field("When it is tried next.", default=None)
    last_status_code: int | None = field(doc="The last HTTP status.", default=None)
    last_reason: str | None = field(doc="Why the last attempt failed.", default=None)
    finished_at: str | None = timestamp_field("When it succeeded or failed.", default=None)
    redeliveries: int = count_field("Times it was redelivered.", default=0)
    attempt_log: tuple[WebhookAttempt, ...] = field(
        doc="Its attempts, oldest first.", factory=tuple, max_items=64
    )


@attrs.frozen
class WebhookShowOutput:
    """A webhook and a page of its deliveries: the newest 20 (of a state, when asked), then
    older ones by `nextCursor`."""

    webhook: Webhook = field(doc="The webhook.")
    deliveries: tuple[WebhookDelivery, ...] = field(doc="Newest first.", max_items=20)
    next_cursor: str | None = field(doc="Cursor of older deliveries; null on the last page.",
                                    default=None)  # fmt: skip


_ERRORS = ("resource_not_found", "revision_conflict", "invalid_state",
           "webhook_destination_refused", "webhook_limit_reached")  # fmt: skip

WEBHOOK_OPERATIONS = (
    operation(
        operation_id="webhooks.change.preview",
        agent_exposure="eligible",
        summary="Preview adding, removing, testing a webhook or redelivering a delivery.",
        input_type=WebhookChangePreviewInput,
        output_type=WebhookChangePreviewOutput,
        errors=(*_ERRORS, "idempotency_conflict"),
    ),
    mutation(
        operation_id="webhooks.change.confirm",
        agent_exposure="human-only",
        summary="Confirm a previewed webhook change.",
        input_type=WebhookChangeConfirmInput,
        output_type=WebhookChangeConfirmOutput,
        risk="consequential",
        confirmation="required",
        effect_class="external-uncertain",
        revision_fields=("change.expectedRevision",),
        event_types=(
            "webhook.added",
            "webhook.removed",
            "webhook.tested",
            "webhook.redelivery_requested",
        ),
        errors=(
            *_ERRORS,
            "confirmation_required",
            "preview_expired",
            "preview_mismatch",
            "proof_spent",
        ),
    ),
    operation(
        operation_id="webhooks.list",
        agent_exposure="eligible",
        summary="List the webhooks, oldest first, paged by cursor.",
        input_type=WebhookListInput,
        output_type=WebhookListOutput,
        errors=("invalid_cursor", "cursor_reset_required"),
    ),
    operation(
        operation_id="webhooks.show",
        agent_exposure="eligible",
        summary="Show a webhook and a page of its deliveries (newest first) with their attempts.",
        input_type=WebhookShowInput,
        output_type=WebhookShowOutput,
        errors=("resource_not_found", "invalid_cursor", "cursor_reset_required"),
    ),
)
