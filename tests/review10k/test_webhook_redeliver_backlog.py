"""A webhook redeliver or test respects the 1,000-pending-deliveries backlog the outbox
keeps: past it the preview and the confirm refuse (invalid_state, details.state
backlog_full) and nothing is queued (each queued a 1,001st pending delivery before)."""

from __future__ import annotations

import sqlite3
from typing import Any

import pytest

from actors.webhook import MAX_PENDING_PER_WEBHOOK, count_pending, get_delivery, insert_delivery
from maia.core import MaiaError
from maia.service import ServiceContext
from maia.service._webhooks import webhooks_change_confirm, webhooks_change_preview

from ..maia.service._helpers import params
from ..maia.service.test_webhooks import SPEC, _change
from ..maia.service.test_webhooks import ctx as ctx

LATER_MS = 4_000_000_000_000  # the pending ones wait (2096): no attempt is made meanwhile


def _queue(hook: str, first: int, count: int, refused: str | None = None) -> Any:
    def write(conn: sqlite3.Connection) -> list[str]:
        for n in range(first, first + count):
            insert_delivery(conn, webhook_id=hook, seq=n, event_id=f"event_backlog{n:012d}",
                            event_type="turn.completed", body=b"{}", now_ms=1,
                            refused_reason=refused)  # fmt: skip
        conn.execute("UPDATE webhook_deliveries SET next_attempt_ms = ? WHERE state = 'pending'",
                     (LATER_MS,))  # fmt: skip
        return [r[0] for r in conn.execute(
            "SELECT delivery_id FROM webhook_deliveries WHERE state = 'failed'")]  # fmt: skip

    return write


async def test_redeliver_past_the_backlog_is_refused(ctx: ServiceContext) -> None:
    """999 pending: a failed delivery's redeliver previews; the 1,000th arrives; its confirm
    and a new preview are refused backlog_full, and the delivery stays failed."""
    added = await _change(ctx, "add", {"kind": "add", "spec": SPEC})
    hook = added.webhook.webhook_id
    [failed] = await ctx.store.write(_queue(hook, 1, 1, refused="backlog_full"))
    await ctx.store.write(_queue(hook, 2, MAX_PENDING_PER_WEBHOOK - 1))
    change = {"kind": "redeliver", "deliveryId": failed, "expectedRevision": 1}
    body: dict[str, Any] = {"commandId": "again", "change": change}
    preview = await webhooks_change_preview(ctx, params("webhooks.change.preview", body))
    await ctx.store.write(_queue(hook, MAX_PENDING_PER_WEBHOOK + 1, 1))
    proof = {"inputDigest": preview.input_digest, "previewId": preview.preview_id,
             "proof": preview.proof}  # fmt: skip
    with pytest.raises(MaiaError) as confirm:
        await webhooks_change_confirm(ctx, params("webhooks.change.confirm", body | proof))
    with pytest.raises(MaiaError) as again:
        await webhooks_change_preview(ctx, params("webhooks.change.preview",
                                                  {**body, "commandId": "again2"}))  # fmt: skip
    for refused in (confirm.value, again.value):
        assert refused.code == "invalid_state"
        assert refused.details["state"] == "backlog_full"
        assert refused.details["limit"] == MAX_PENDING_PER_WEBHOOK
    assert await ctx.read(lambda c: count_pending(c, hook)) == MAX_PENDING_PER_WEBHOOK
    record = await ctx.read(lambda c: get_delivery(c, failed))
    assert record is not None
    assert (record.status.state.value, record.status.redeliveries) == ("failed", 0)


async def test_a_test_ping_past_the_backlog_is_refused(ctx: ServiceContext) -> None:
    """1,000 pending: `webhook test` is refused at preview, and at a confirm previewed at
    999; no ping is queued and the webhook stays at revision 1."""
    added = await _change(ctx, "add", {"kind": "add", "spec": SPEC})
    hook = added.webhook.webhook_id
    await ctx.store.write(_queue(hook, 1, MAX_PENDING_PER_WEBHOOK - 1))
    body: dict[str, Any] = {
        "commandId": "ping",
        "change": {"kind": "test", "webhookId": hook, "expectedRevision": 1},
    }
    preview = await webhooks_change_preview(ctx, params("webhooks.change.preview", body))
    await ctx.store.write(_queue(hook, MAX_PENDING_PER_WEBHOOK, 1))
    proof = {"inputDigest": preview.input_digest, "previewId": preview.preview_id,
             "proof": preview.proof}  # fmt: skip
    with pytest.raises(MaiaError) as confirm:
        await webhooks_change_confirm(ctx, params("webhooks.change.confirm", body | proof))
    with pytest.raises(MaiaError) as again:
        await webhooks_change_preview(ctx, params("webhooks.change.preview",
                                                  {**body, "commandId": "ping2"}))  # fmt: skip
    for refused in (confirm.value, again.value):
        assert (refused.code, refused.details["state"]) == ("invalid_state", "backlog_full")
    assert await ctx.read(lambda c: count_pending(c, hook)) == MAX_PENDING_PER_WEBHOOK
    pings = await ctx.read(
        lambda c: c.execute(
            "SELECT count(*) FROM webhook_deliveries WHERE event_type = 'maia.ping'"
        ).fetchone()[0]
    )
    assert pings == 0
