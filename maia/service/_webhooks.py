"""webhooks.change.preview/confirm, webhooks.list, webhooks.show (spec: Webhook operations).

The preview judges the change as the confirm will (the SSRF rules for an add's literal
address, the webhook's state and revision, the delivery's state) and issues a one-time proof
bound to the actor, the confirm's operation and the digest of the change (which holds the
destination and the expected revision). The confirm spends the proof, compares the revision
and applies the webhook's transition in one storage transaction with its event and receipt.
Nothing here talks to a receiver: deliveries are queued rows, and the webhook service
(`actors.webhook`) learns of every change from the journal's commit notifications.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Awaitable, Callable
from typing import Any, Final

import attrs

from actors.webhook import (
    DELIVERY_TABLE,
    WEBHOOK_TABLE,
    Changed,
    DeliveryEvent,
    DeliveryRecord,
    DestinationRefused,
    WebhookEvent,
    WebhookRecord,
    WebhookSpec,
    WebhookState,
    add_webhook,
    attempts_of,
    check_url,
    get_delivery,
    get_webhook,
    list_webhooks,
    parse_allow_addresses,
    ping_webhook,
    recent_deliveries,
    redeliver_delivery,
    remove_webhook,
    require_webhook,
    webhook_id_for,
)
from maia.core import MaiaError, check, digest_json, format_timestamp_ms, to_json
from maia.protocol import (
    WebhookAddChange,
    WebhookChangeConfirmInput,
    WebhookChangeConfirmOutput,
    WebhookChangePreviewInput,
    WebhookChangePreviewOutput,
    WebhookListInput,
    WebhookListOutput,
    WebhookRedeliverChange,
    WebhookRef,
    WebhookRemoveChange,
    WebhookShowOutput,
)
from storage import (
    Applied,
    Confirmation,
    ExpectedTarget,
    MutationKey,
    issue_preview,
    run_mutation,
)

from ._context import LOCAL_ACTOR, ServiceContext, mutation_output

CONFIRM_OP: Final = "webhooks.change.confirm"
PREVIEW_TTL_MS: Final = 120_000
_EVENTS: Final = {"remove": WebhookEvent.REMOVE, "test": WebhookEvent.TEST,
                  "redeliver": WebhookEvent.REDELIVER}  # fmt: skip


def _digest(change: Any) -> str:
    return digest_json({"change": to_json(change)})


def _spec(change: WebhookAddChange) -> WebhookSpec:
    s = change.spec
    return WebhookSpec(s.url, tuple(s.event_types), s.secret_env, s.project_id, s.session_id,
                       s.description)  # fmt: skip


def _checked_url(ctx: ServiceContext, url: str) -> str:
    """Raises `webhook_destination_refused` for a URL the rules refuse without resolving."""
    try:
        return check_url(url, parse_allow_addresses(ctx.config.webhooks.allow_addresses)).url
    except DestinationRefused as refused:
        raise MaiaError(
            "webhook_destination_refused",
            f"the webhook URL is refused: {refused.message}",
            {"path": "change.spec.url", "reason": refused.reason},
        ) from None


def _judge(conn: sqlite3.Connection, change: Any) -> tuple[WebhookRecord, DeliveryRecord | None]:
    """The webhook (and delivery) a remove, test or redeliver names, after the same checks its
    confirm makes. Raises `resource_not_found`, `revision_conflict`, `invalid_state`."""
    delivery = None
    if isinstance(change, WebhookRedeliverChange):
        delivery = get_delivery(conn, change.delivery_id)
        if delivery is None:
            raise MaiaError("resource_not_found", f"delivery {change.delivery_id} does not exist",
                            {"resource": "delivery", "id": change.delivery_id})  # fmt: skip
        record = require_webhook(conn, delivery.webhook_id)
    else:
        record = require_webhook(conn, change.webhook_id)
    WEBHOOK_TABLE.step(record.state, _EVENTS[change.kind], caller="client",
                       aggregate_id=record.webhook_id, expected_revision=change.expected_revision,
                       revision=record.revision)  # fmt: skip
    if delivery is not None:
        DELIVERY_TABLE.step(delivery.status.state, DeliveryEvent.REDELIVER, caller="client",
                            aggregate_id=delivery.delivery_id)  # fmt: skip
    return record, delivery


async def webhooks_change_preview(
    ctx: ServiceContext, params: WebhookChangePreviewInput
) -> WebhookChangePreviewOutput:
    """Raises `webhook_destination_refused`, `resource_not_found`, `revision_conflict`,
    `invalid_state`."""
    change = params.change
    digest = _digest(change)
    url = _checked_url(ctx, change.spec.url) if isinstance(change, WebhookAddChange) else None

    def preview(conn: sqlite3.Connection) -> dict[str, Any]:
        wire: dict[str, Any] = {"action": change.kind}
        if isinstance(change, WebhookAddChange):
            webhook_id = webhook_id_for(LOCAL_ACTOR, params.command_id)
            wire |= {"webhookId": webhook_id, "url": url}
            target = ExpectedTarget("webhook", webhook_id, None)
        else:
            record, delivery = _judge(conn, change)
            wire |= {"webhookId": record.webhook_id, "url": record.url,
                     "revision": record.revision}  # fmt: skip
            if delivery is not None:
                wire["deliveryId"] = delivery.delivery_id
            target = ExpectedTarget("webhook", record.webhook_id, record.revision)
        issued = issue_preview(conn, actor_id=LOCAL_ACTOR, operation_id=CONFIRM_OP,
                               input_digest=digest, targets=(target,), clock=ctx.clock,
                               node_epoch=ctx.store.node_epoch, ttl_ms=PREVIEW_TTL_MS)  # fmt: skip
        return wire | {"inputDigest": digest, "previewId": issued.preview_id,
                       "proof": issued.proof,
                       "expiresAt": format_timestamp_ms(issued.expires_ms)}  # fmt: skip

    return check(WebhookChangePreviewOutput, await ctx.store.write(preview), root="result")


def _apply(ctx: ServiceContext, params: WebhookChangeConfirmInput, url: str | None,
           conn: sqlite3.Connection) -> Applied:  # fmt: skip
    change, now = params.change, ctx.now()
    changed: Changed
    if isinstance(change, WebhookAddChange):
        assert url is not None
        spec = attrs.evolve(_spec(change), url=url)
        webhook_id = webhook_id_for(LOCAL_ACTOR, params.command_id)
        changed = add_webhook(conn, webhook_id, spec, now, LOCAL_ACTOR)
    elif isinstance(change, WebhookRemoveChange):
        changed = remove_webhook(conn, change.webhook_id, change.expected_revision, now,
                                 LOCAL_ACTOR)  # fmt: skip
    elif isinstance(change, WebhookRedeliverChange):
        changed = redeliver_delivery(conn, change.delivery_id, change.expected_revision, now,
                                     LOCAL_ACTOR)  # fmt: skip
    else:
        changed = ping_webhook(conn, change.webhook_id, change.expected_revision, now,
                               LOCAL_ACTOR)  # fmt: skip
    result: dict[str, Any] = {"webhook": webhook_wire(changed.webhook)}
    if changed.delivery_id is not None:
        result["deliveryId"] = changed.delivery_id
    return Applied(result, (changed.target,), (changed.event_id,),
                   project_id=changed.webhook.project_id)  # fmt: skip


async def webhooks_change_confirm(
    ctx: ServiceContext, params: WebhookChangeConfirmInput
) -> WebhookChangeConfirmOutput:
    """Raises `confirmation_required`, `preview_mismatch`, `preview_expired`, `proof_spent`,
    `idempotency_conflict`, `webhook_destination_refused`, `webhook_limit_reached`,
    `resource_not_found`, `revision_conflict`, `invalid_state`."""
    change = params.change
    digest = _digest(change)
    if params.input_digest != digest:
        raise MaiaError("preview_mismatch", f"inputDigest does not match preview "
                        f"{params.preview_id}", {"previewId": params.preview_id})  # fmt: skip
    url = _checked_url(ctx, change.spec.url) if isinstance(change, WebhookAddChange) else None
    key = MutationKey(LOCAL_ACTOR, CONFIRM_OP, params.command_id)

    def confirm(conn: sqlite3.Connection) -> Any:
        return run_mutation(conn, key=key, input_digest=digest, now_ms=ctx.now(),
                            apply=lambda c: _apply(ctx, params, url, c),
                            confirmation=Confirmation(params.preview_id, params.proof),
                            clock=ctx.clock, node_epoch=ctx.store.node_epoch)  # fmt: skip

    return mutation_output(WebhookChangeConfirmOutput, await ctx.store.write(confirm))


def webhook_wire(record: WebhookRecord) -> dict[str, Any]:
    wire: dict[str, Any] = {
        "webhookId": record.webhook_id, "url": record.url,
        "eventTypes": list(record.event_types), "secretEnv": record.secret_env,
        "state": record.state.value, "revision": record.revision,
        "createdAt": format_timestamp_ms(record.created_ms),
        "updatedAt": format_timestamp_ms(record.updated_ms),
    }  # fmt: skip
    optional = {"projectId": record.project_id, "sessionId": record.session_id,
                "description": record.description, "stateReason": record.state_reason}  # fmt: skip
    return wire | {k: v for k, v in optional.items() if v is not None}


def _when(ms: int | None) -> str | None:
    return None if ms is None else format_timestamp_ms(ms)


def _delivery_wire(conn: sqlite3.Connection, d: DeliveryRecord) -> dict[str, Any]:
    s = d.status
    log = [{"number": a.number, "startedAt": format_timestamp_ms(a.started_ms),
            "outcome": a.outcome, "finishedAt": _when(a.finished_ms),
            "statusCode": a.status_code, "reason": a.reason}
           for a in attempts_of(conn, d.delivery_id)[-64:]]  # fmt: skip
    wire = {"deliveryId": d.delivery_id, "messageId": d.message_id, "eventId": d.event_id,
            "eventType": d.event_type, "state": s.state.value, "attempts": s.attempts,
            "createdAt": format_timestamp_ms(d.created_ms), "nextAttemptAt": _when(
            s.next_attempt_ms), "lastStatusCode": s.last_status_code,
            "lastReason": s.last_reason, "finishedAt": _when(s.finished_ms),
            "redeliveries": s.redeliveries, "attemptLog": log}  # fmt: skip
    return _drop_none(wire)


def _drop_none(wire: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in wire.items() if v is not None}
    if "attemptLog" in out:
        out["attemptLog"] = [_drop_none(a) for a in out["attemptLog"]]
    return out


async def webhooks_list(ctx: ServiceContext, params: WebhookListInput) -> WebhookListOutput:
    """The webhooks, oldest first (removed ones only when asked)."""
    states = () if params.include_removed else (WebhookState.ACTIVE, WebhookState.DISABLED)
    records = await ctx.read(lambda c: list_webhooks(c, states=states))
    wire = {"webhooks": [webhook_wire(r) for r in records]}
    return check(WebhookListOutput, wire, root="result")


async def webhooks_show(ctx: ServiceContext, params: WebhookRef) -> WebhookShowOutput:
    """Raises `resource_not_found`."""

    def show(conn: sqlite3.Connection) -> dict[str, Any]:
        record = get_webhook(conn, params.webhook_id)
        if record is None:
            raise MaiaError("resource_not_found", f"webhook {params.webhook_id} does not exist",
                            {"resource": "webhook", "id": params.webhook_id})  # fmt: skip
        deliveries = [_delivery_wire(conn, d) for d in recent_deliveries(conn, record.webhook_id)]
        return {"webhook": webhook_wire(record), "deliveries": deliveries}

    return check(WebhookShowOutput, await ctx.read(show), root="result")


WEBHOOK_HANDLERS: Final[dict[str, Callable[[ServiceContext, Any], Awaitable[Any]]]] = {
    "webhooks.change.preview": webhooks_change_preview,
    "webhooks.change.confirm": webhooks_change_confirm,
    "webhooks.list": webhooks_list,
    "webhooks.show": webhooks_show,
}
