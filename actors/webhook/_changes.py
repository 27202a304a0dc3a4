"""The webhook's transitions as `Write`s for the one write path (docs/actors.md).

Each builder returns the `Write` its actor commits: the webhook row's `Change` (its table
events, checked by the webhook table: caller, expected revision, state), the client command
(idempotency key and receipt), the stored result, and `sql` for what the table does not
know: spending the preview's proof, cancelling, queueing or re-queueing deliveries. It all
commits in one transaction, so a refused or failed change leaves nothing behind, and a
retried commandId replays the stored result even after its proof was spent.
A webhook's ID derives from the actor and the add's commandId, so the preview names the
webhook the confirm will create and a retried add names the same one.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Callable
from typing import Any, Final

import attrs

from actors import CLIENT, NODE, Change, Command, Write
from maia.core import Clock, MaiaError
from storage import consume_preview

from ._core import cancel, redeliver
from ._deliveries import (
    delivery_ids,
    get_delivery,
    insert_delivery,
    pending_of,
    require_backlog_room,
    save_status,
)
from ._signing import delivery_body
from ._sql import (
    MAX_WEBHOOKS,
    WEBHOOK_ROWS,
    WebhookRecord,
    count_live_webhooks,
    get_webhook,
    latest_event,
)
from ._table import WEBHOOK_TABLE, WebhookEvent, WebhookState
from ._views import webhook_wire

TARGET_TYPE: Final = "webhook"
PING_EVENT_TYPE: Final = "maia.ping"
SqlFn = Callable[[sqlite3.Connection, tuple[Any, ...]], None]


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
class Proof:
    """The preview a confirm spends, and what the proof must be bound to."""

    preview_id: str
    proof: str
    clock: Clock = attrs.field(eq=False)
    node_epoch: int


def webhook_id_for(actor_id: str, command_id: str) -> str:
    """`hook_` + 32 hex derived from the actor and the add's commandId."""
    return "hook_" + hashlib.sha256(f"{actor_id}\0{command_id}".encode()).hexdigest()[:32]


def not_found(resource: str, row_id: str) -> MaiaError:
    return MaiaError(
        "resource_not_found",
        f"{resource} {row_id} does not exist",
        {"resource": resource, "id": row_id},
    )


def _spend(command: Command, proof: Proof, webhook_id: str) -> SqlFn:
    """Spend the proof of a preview that named this webhook. The digest is the change's
    alone, so an add's proof would also pass under another commandId, which names another
    webhook than the one the preview answered: that is `preview_mismatch`."""

    def spend(conn: sqlite3.Connection, _: tuple[Any, ...]) -> None:
        targets = consume_preview(
            conn, preview_id=proof.preview_id, proof=proof.proof, actor_id=command.actor_id,
            operation_id=command.operation, input_digest=command.digest,
            command_id=command.command_id, clock=proof.clock, node_epoch=proof.node_epoch,
        )  # fmt: skip
        named = {t.target_id for t in targets if t.target_type == TARGET_TYPE}
        if named and webhook_id not in named:
            raise MaiaError(
                "preview_mismatch",
                f"preview {proof.preview_id} named webhook {min(named)}, not {webhook_id}: "
                "confirm with the commandId it was previewed with",
                {"previewId": proof.preview_id, "commandId": command.command_id},
            )

    return spend


def _all(*steps: SqlFn) -> SqlFn:
    def run(conn: sqlite3.Connection, records: tuple[Any, ...]) -> None:
        for step in steps:
            step(conn, records)

    return run


def _result(delivery_id: Callable[[sqlite3.Connection], str] | None = None) -> Any:
    def result(conn: sqlite3.Connection, records: tuple[Any, ...]) -> dict[str, Any]:
        # The row as this transaction wrote it: its times are the commit's, not the ones
        # the actor built the record with, so the answer is what show and list read.
        stored = get_webhook(conn, records[0].webhook_id)
        out: dict[str, Any] = {"webhook": webhook_wire(stored or records[0])}
        if delivery_id is not None:
            out["deliveryId"] = delivery_id(conn)
        return out

    return result


def _cancel_pending(webhook_id: str, now_ms: int, why: str) -> SqlFn:
    def run(conn: sqlite3.Connection, _: tuple[Any, ...]) -> None:
        for delivery in pending_of(conn, webhook_id):
            cancelled = cancel(delivery.status, now_ms, why)
            if cancelled is not None:
                save_status(conn, delivery.delivery_id, cancelled, now_ms)

    return run


def add_write(webhook_id: str, spec: WebhookSpec, command: Command, proof: Proof,
              now_ms: int) -> Write:  # fmt: skip
    """Create the webhook, active at revision 1, delivering the events after this one."""
    record = WebhookRecord(
        webhook_id, spec.url, spec.event_types, spec.project_id, spec.session_id,
        spec.secret_env, spec.description, WebhookState.ACTIVE, None, 0, 0, now_ms, now_ms,
    )  # fmt: skip

    def limit(conn: sqlite3.Connection, _: tuple[Any, ...]) -> None:
        if count_live_webhooks(conn) > MAX_WEBHOOKS:  # the new one counts already
            raise MaiaError("webhook_limit_reached",
                            f"the Node has {MAX_WEBHOOKS} webhooks; remove one first",
                            {"limit": MAX_WEBHOOKS})  # fmt: skip

    change = Change(WEBHOOK_ROWS, WEBHOOK_TABLE, None, record, (WebhookEvent.ADD,), CLIENT)
    return Write(changes=(change,), command=command, result=_result(),
                 sql=_all(_spend(command, proof, webhook_id), limit))  # fmt: skip


def remove_write(record: WebhookRecord, expected_revision: int, command: Command,
                 proof: Proof, now_ms: int) -> Write:  # fmt: skip
    """Remove the webhook; its pending deliveries are cancelled."""
    after = attrs.evolve(record, state_reason="removed by the operator")
    change = Change(WEBHOOK_ROWS, WEBHOOK_TABLE, record, after, (WebhookEvent.REMOVE,), CLIENT,
                    expected_revision)  # fmt: skip
    cancel_all = _cancel_pending(record.webhook_id, now_ms, "webhook removed")
    return Write(changes=(change,), command=command, result=_result(),
                 sql=_all(_spend(command, proof, record.webhook_id), cancel_all))  # fmt: skip


def ping_write(record: WebhookRecord, expected_revision: int, command: Command, proof: Proof,
               now_ms: int) -> Write:  # fmt: skip
    """Queue a `maia.ping` delivery, keyed by the `webhook.tested` event the change emits,
    unless the webhook's backlog is full (`require_backlog_room`)."""
    change = Change(WEBHOOK_ROWS, WEBHOOK_TABLE, record, record, (WebhookEvent.TEST,), CLIENT,
                    expected_revision)  # fmt: skip
    hook = record.webhook_id

    def queue(conn: sqlite3.Connection, records: tuple[Any, ...]) -> None:
        require_backlog_room(conn, hook)
        event_id, position = latest_event(conn, hook)
        data = {"webhookId": hook, "eventId": event_id, "revision": records[0].revision}
        body = delivery_body(PING_EVENT_TYPE, now_ms, data)
        insert_delivery(conn, webhook_id=hook, seq=position, event_id=event_id,
                        event_type=PING_EVENT_TYPE, body=body, now_ms=now_ms)  # fmt: skip

    def queued(conn: sqlite3.Connection) -> str:
        return delivery_ids(hook, latest_event(conn, hook)[0])[0]

    return Write(changes=(change,), command=command, result=_result(queued),
                 sql=_all(_spend(command, proof, record.webhook_id), queue))  # fmt: skip


def redeliver_write(record: WebhookRecord, delivery_id: str, expected_revision: int,
                    command: Command, proof: Proof, now_ms: int) -> Write:  # fmt: skip
    """Queue one finished delivery again: the same message ID, a new round of the schedule,
    unless the webhook's backlog is full (`require_backlog_room`)."""
    change = Change(WEBHOOK_ROWS, WEBHOOK_TABLE, record, record, (WebhookEvent.REDELIVER,),
                    CLIENT, expected_revision)  # fmt: skip

    def requeue(conn: sqlite3.Connection, _: tuple[Any, ...]) -> None:
        delivery = get_delivery(conn, delivery_id)
        if delivery is None or delivery.webhook_id != record.webhook_id:
            raise not_found("delivery", delivery_id)
        status = redeliver(delivery.status, now_ms, CLIENT)  # its state refuses first
        require_backlog_room(conn, record.webhook_id)
        save_status(conn, delivery_id, status, now_ms)

    return Write(changes=(change,), command=command, result=_result(lambda _: delivery_id),
                 sql=_all(_spend(command, proof, record.webhook_id), requeue))  # fmt: skip


def gone_write(record: WebhookRecord, reason: str, now_ms: int) -> Write:
    """The Node's transition on a 410: disabled, with what it had pending cancelled."""
    after = attrs.evolve(record, state_reason=reason)
    change = Change(WEBHOOK_ROWS, WEBHOOK_TABLE, record, after, (WebhookEvent.GONE,), NODE)
    return Write(changes=(change,), sql=_cancel_pending(record.webhook_id, now_ms,
                                                        "webhook disabled"))  # fmt: skip
