"""webhooks.change.preview/confirm, webhooks.list, webhooks.show (spec: Webhook operations).

The preview judges the change as the confirm will (the SSRF rules for an add's literal
address, the webhook's state and revision, the delivery's state) and issues a one-time proof
bound to the actor, the confirm's operation and the digest of the change (which holds the
destination and the expected revision). The confirm spends the proof, compares the revision
and applies the webhook's transition in one storage transaction with its event and receipt.
The confirm is applied by the webhook's actor (`actors.webhook`), through the one write path.
Nothing here talks to a receiver: deliveries are queued rows.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Final

import attrs

from actors import Command
from actors.webhook import (
    DELIVERY_TABLE,
    MAX_WEBHOOKS,
    RECENT_DELIVERIES,
    WEBHOOK_TABLE,
    WEBHOOKS,
    ConfirmChange,
    DeliveryEvent,
    DeliveryRecord,
    DestinationRefused,
    IPNetwork,
    Proof,
    WebhookEvent,
    WebhookRecord,
    WebhookService,
    WebhookSpec,
    WebhookState,
    check_url,
    count_live_webhooks,
    delivery_wire,
    get_delivery,
    get_webhook,
    not_found,
    page_webhooks,
    parse_allow_addresses,
    preview_revision,
    recent_deliveries,
    require_backlog_room,
    webhook_id_for,
    webhook_wire,
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
    WebhookShowInput,
    WebhookShowOutput,
)
from storage import ExpectedTarget, find_receipt, issue_preview

from ._context import LOCAL_ACTOR, ServiceContext, mutation_output
from ._event_types import check_webhook_types
from ._kinds import running_kind
from ._page_bytes import PAGE_BUDGET_BYTES, fitting, webhook_bytes
from ._paging import issue, open_cursor
from ._replay import stored_replay

CONFIRM_OP: Final = "webhooks.change.confirm"
PREVIEW_TTL_MS: Final = 120_000
LIST_SCOPE: Final = "webhooks.list"
# A page's bytes. At today's limits 100 webhooks stay near 700 KB, under it: the cut is a
# guard for wider fields to come (tests/maia/service/test_webhooks_wide_list.py lowers it).
LIST_BUDGET_BYTES = PAGE_BUDGET_BYTES
SHOW_SCOPE: Final = "webhooks.show"
_EVENTS: Final = {"remove": WebhookEvent.REMOVE, "test": WebhookEvent.TEST,
                  "redeliver": WebhookEvent.REDELIVER}  # fmt: skip


def _digest(change: Any) -> str:
    return digest_json({"change": to_json(change)})


def _spec(change: WebhookAddChange) -> WebhookSpec:
    s = change.spec
    return WebhookSpec(s.url, tuple(s.event_types), s.secret_env, s.project_id, s.session_id,
                       s.description)  # fmt: skip


async def _allow(ctx: ServiceContext) -> tuple[IPNetwork, ...]:
    """`webhooks.allowAddresses` as admitted now: an admission applies at once, not at the
    next start (`ctx.config` is the configuration the Node started on)."""
    effective = await ctx.admitted.of(None)
    return parse_allow_addresses(effective.user.webhooks.allow_addresses)


def _checked_url(allow: Sequence[IPNetwork], url: str) -> str:
    """Raises `webhook_destination_refused` for a URL the rules refuse without resolving."""
    try:
        return check_url(url, allow).url
    except DestinationRefused as refused:
        raise MaiaError(
            "webhook_destination_refused",
            f"the webhook URL is refused: {refused.message}",
            {"path": "change.spec.url", "reason": refused.reason},
        ) from None


def _checked_spec(conn: sqlite3.Connection, change: WebhookAddChange) -> None:
    """Raises `validation_failed` for an event type no webhook is ever sent and
    `resource_not_found` (naming the field in `details.path`) for a Project or Session that
    does not exist, or a Session outside the Project: such a webhook would match nothing."""
    spec = change.spec
    check_webhook_types("change.spec.eventTypes", spec.event_types)
    if spec.project_id is not None:
        row = conn.execute("SELECT 1 FROM projects WHERE project_id = ?",
                           (spec.project_id,)).fetchone()  # fmt: skip
        if row is None:
            raise _missing("project", spec.project_id, "change.spec.projectId")
    if spec.session_id is not None:
        found = conn.execute("SELECT project_id FROM sessions WHERE session_id = ?",
                             (spec.session_id,)).fetchone()  # fmt: skip
        if found is None or spec.project_id not in (None, found[0]):
            where = "" if found is None else f" in project {spec.project_id}"
            raise _missing("session", spec.session_id, "change.spec.sessionId", where)


def _missing(resource: str, row_id: str, path: str, where: str = "") -> MaiaError:
    return MaiaError("resource_not_found", f"{path}: {resource} {row_id} does not exist{where}",
                     {"resource": resource, "id": row_id, "path": path})  # fmt: skip


def _unused_command(conn: sqlite3.Connection, command_id: str, digest: str) -> bool:
    """Raises `idempotency_conflict` when `command_id` already confirmed another change: its
    confirm would refuse it, so the preview issues no proof for it (spec: a different
    normalized input under the same commandId). The same change previews again (its
    confirm answers the stored result): True then."""
    stored = find_receipt(conn, actor_id=LOCAL_ACTOR, operation_id=CONFIRM_OP,
                          command_id=command_id)  # fmt: skip
    if stored is not None and stored.normalized_input_digest != digest:
        raise MaiaError(
            "idempotency_conflict",
            f"command {command_id} was used for {CONFIRM_OP} with another change",
            {"commandId": command_id, "operationId": CONFIRM_OP},
        )
    return stored is not None


def _judge(conn: sqlite3.Connection, change: Any,
           replay: bool = False) -> tuple[WebhookRecord, DeliveryRecord | None]:  # fmt: skip
    """The webhook (and delivery) a remove, test or redeliver names, after the same checks its
    confirm makes (none for a `replay`: the change is done, its confirm answers the stored
    result). Raises `resource_not_found`, `revision_conflict`, `invalid_state` (also a test
    or redeliver past the webhook's backlog of pending deliveries: details.state
    backlog_full)."""
    delivery = None
    if isinstance(change, WebhookRedeliverChange):
        delivery = get_delivery(conn, change.delivery_id)
        if delivery is None:
            raise _missing("delivery", change.delivery_id, "change.deliveryId")
        found = get_webhook(conn, delivery.webhook_id)
    else:
        found = get_webhook(conn, change.webhook_id)
    if found is None:
        if delivery is not None:
            raise _missing("webhook", delivery.webhook_id, "change.deliveryId")
        raise _missing("webhook", change.webhook_id, "change.webhookId")
    record = found
    if replay:
        return record, delivery
    expected = record.revision if change.expected_revision is None else change.expected_revision
    WEBHOOK_TABLE.step(record.state, _EVENTS[change.kind], caller="client",
                       aggregate_id=record.webhook_id, expected_revision=expected,
                       revision=record.revision)  # fmt: skip
    if delivery is not None:
        DELIVERY_TABLE.step(delivery.status.state, DeliveryEvent.REDELIVER, caller="client",
                            aggregate_id=delivery.delivery_id)  # fmt: skip
    if change.kind in ("test", "redeliver"):  # each queues one more delivery
        require_backlog_room(conn, record.webhook_id)
    return record, delivery


async def webhooks_change_preview(
    ctx: ServiceContext, params: WebhookChangePreviewInput
) -> WebhookChangePreviewOutput:
    """Raises `validation_failed` (an event type never delivered), `webhook_destination_refused`,
    `resource_not_found`, `revision_conflict`, `invalid_state`, `idempotency_conflict` (the
    commandId confirmed another change)."""
    change = params.change
    digest = _digest(change)
    url = None
    # A retry of an add this commandId confirmed is not judged again (its confirm answers the
    # stored result), so an admission that narrowed webhooks.allowAddresses since, or a
    # Project or Session gone, does not stop `maia webhook add --command-id C --yes` twice.
    done = await ctx.read(lambda c: _unused_command(c, params.command_id, digest))
    if isinstance(change, WebhookAddChange) and not done:
        url = _checked_url(await _allow(ctx), change.spec.url)

    def preview(conn: sqlite3.Connection) -> dict[str, Any]:
        replay = _unused_command(conn, params.command_id, digest)
        wire: dict[str, Any] = {"action": change.kind}
        if isinstance(change, WebhookAddChange):
            webhook_id = webhook_id_for(LOCAL_ACTOR, params.command_id)
            made = get_webhook(conn, webhook_id)
            if replay and made is not None:
                wire |= {"webhookId": webhook_id, "url": made.url}
            else:
                if url is None:  # the look-up saw its receipt, which cannot have gone since
                    raise MaiaError("storage_conflict", f"command {params.command_id} changed "
                                    "while previewed; preview again",
                                    {"commandId": params.command_id})  # fmt: skip
                _checked_spec(conn, change)
                if made is None and count_live_webhooks(conn) >= MAX_WEBHOOKS:
                    raise MaiaError("webhook_limit_reached", f"the Node has {MAX_WEBHOOKS} "
                                    "webhooks; remove one first",
                                    {"limit": MAX_WEBHOOKS})  # fmt: skip
                wire |= {"webhookId": webhook_id, "url": url}
            target = ExpectedTarget("webhook", webhook_id, None)
        else:
            record, delivery = _judge(conn, change, replay)
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


async def _service(ctx: ServiceContext) -> WebhookService:
    """The webhook kind, opened on its first use (`_kinds`). Raises `unavailable` when it is
    not running."""
    return await running_kind(ctx.runtime, WEBHOOKS)


async def webhooks_change_confirm(
    ctx: ServiceContext, params: WebhookChangeConfirmInput
) -> WebhookChangeConfirmOutput:
    """Raises `validation_failed`, `confirmation_required`, `preview_mismatch`,
    `preview_expired`, `proof_spent`, `idempotency_conflict`, `webhook_destination_refused`,
    `webhook_limit_reached`, `resource_not_found`, `revision_conflict`, `invalid_state`.
    A retried command answers its stored result before any check but the digest's."""
    change = params.change
    digest = _digest(change)
    preview_id = params.preview_id
    if preview_id is None or params.proof is None or params.input_digest is None:
        raise MaiaError("confirmation_required", f"{CONFIRM_OP} needs a preview and its proof",
                        {"method": CONFIRM_OP})  # fmt: skip
    if params.input_digest != digest:
        raise MaiaError("preview_mismatch", f"inputDigest does not match preview "
                        f"{params.preview_id}", {"previewId": params.preview_id})  # fmt: skip
    replayed = await ctx.read(lambda c: stored_replay(
        c, actor_id=LOCAL_ACTOR, operation_id=CONFIRM_OP, command_id=params.command_id,
        digests=(digest,),
    ))  # fmt: skip
    if replayed is not None:  # a retry: answered before the change is judged again
        return mutation_output(WebhookChangeConfirmOutput, replayed)
    command = Command(params.command_id, LOCAL_ACTOR, digest, CONFIRM_OP)
    proof = Proof(preview_id, params.proof, ctx.clock, ctx.store.node_epoch)
    expected: int | None = None
    if not isinstance(change, WebhookAddChange):
        expected = change.expected_revision
        if expected is None:  # the revision the preview read, bound to its proof
            expected = await ctx.read(lambda c: preview_revision(c, preview_id))
        if expected is None:
            raise MaiaError("preview_mismatch", f"no preview {params.preview_id} with that "
                            "proof", {"previewId": params.preview_id})  # fmt: skip
    if isinstance(change, WebhookAddChange):
        add = change
        await ctx.read(lambda c: _checked_spec(c, add))
        spec = attrs.evolve(_spec(change), url=_checked_url(await _allow(ctx), change.spec.url))
        webhook_id = webhook_id_for(LOCAL_ACTOR, params.command_id)
        message = ConfirmChange("add", command, proof, spec=spec)
    elif isinstance(change, WebhookRedeliverChange):
        delivery_id = change.delivery_id
        delivery = await ctx.read(lambda c: get_delivery(c, delivery_id))
        if delivery is None:
            raise _missing("delivery", delivery_id, "change.deliveryId")
        webhook_id = delivery.webhook_id
        message = ConfirmChange("redeliver", command, proof, expected_revision=expected,
                                delivery_id=delivery_id)  # fmt: skip
    else:
        webhook_id = change.webhook_id
        message = ConfirmChange(change.kind, command, proof, expected_revision=expected)
    result = await (await _service(ctx)).ask(webhook_id, message)
    return mutation_output(WebhookChangeConfirmOutput, result)


async def webhooks_list(ctx: ServiceContext, params: WebhookListInput) -> WebhookListOutput:
    """The webhooks, oldest first (removed ones only when asked), a page at a time: removed
    webhooks stay, so the list has no bound but the page's. Raises `invalid_cursor`,
    `cursor_reset_required`."""
    filters = {"includeRemoved": params.include_removed}
    after = None if params.cursor is None else open_cursor(ctx.store, params.cursor,
                                                           LIST_SCOPE, filters)  # fmt: skip
    states = () if params.include_removed else (WebhookState.ACTIVE, WebhookState.DISABLED)
    rows = await ctx.read(lambda c: page_webhooks(c, states=states, after=after,
                                                  limit=params.limit + 1))  # fmt: skip
    page = rows[: params.limit]
    hooks = [webhook_wire(r) for _, r in page]
    kept = fitting(hooks, webhook_bytes, LIST_BUDGET_BYTES)  # the rest would pass 1 MiB
    cursor = None
    if len(rows) > len(page) or kept < len(page):
        hooks, page = hooks[:kept], page[:kept]
        cursor = issue(ctx.store, page[-1][0], LIST_SCOPE, filters)
    return check(WebhookListOutput, {"webhooks": hooks, "nextCursor": cursor}, root="result")


async def webhooks_show(ctx: ServiceContext, params: WebhookShowInput) -> WebhookShowOutput:
    """The webhook and a page of its deliveries, newest first (only `deliveryState`'s when
    given); `nextCursor` continues with older ones (a full backlog leaves thousands). Raises
    `resource_not_found`, `invalid_cursor`, `cursor_reset_required`."""
    filters = {"webhookId": params.webhook_id, "deliveryState": params.delivery_state}
    before = None if params.cursor is None else open_cursor(ctx.store, params.cursor,
                                                            SHOW_SCOPE, filters)  # fmt: skip

    def show(conn: sqlite3.Connection) -> tuple[dict[str, Any], int | None]:
        record = get_webhook(conn, params.webhook_id)
        if record is None:
            raise not_found("webhook", params.webhook_id)
        found = recent_deliveries(conn, record.webhook_id, RECENT_DELIVERIES + 1,
                                  state=params.delivery_state, before=before)  # fmt: skip
        page = found[:RECENT_DELIVERIES]
        last = page[-1].seq if len(found) > len(page) else None
        return {
            "webhook": webhook_wire(record),
            "deliveries": [delivery_wire(conn, d) for d in page],
        }, last

    shown, last = await ctx.read(show)
    if last is not None:  # absent on the last page
        shown["nextCursor"] = issue(ctx.store, last, SHOW_SCOPE, filters)
    return check(WebhookShowOutput, shown, root="result")


WEBHOOK_HANDLERS: Final[dict[str, Callable[[ServiceContext, Any], Awaitable[Any]]]] = {
    "webhooks.change.preview": webhooks_change_preview,
    "webhooks.change.confirm": webhooks_change_confirm,
    "webhooks.list": webhooks_list,
    "webhooks.show": webhooks_show,
}
