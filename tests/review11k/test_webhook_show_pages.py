"""webhooks.show listed a webhook's newest 20 deliveries and nothing else, so after a full
backlog (1,000 pending, then each matching event recorded failed backlog_full) the failed
deliveries docs/webhooks.md says to redeliver could not be found past the newest 20. It now
filters on `deliveryState` and pages by cursor (newest first, then older), so every
delivery is reachable; a cursor of another filter is refused. Real storage, the real
handlers (the deliveries are written by the outbox's own insert_delivery)."""

from __future__ import annotations

from typing import Any

import pytest

from maia.core import MaiaError
from maia.service import ServiceContext

from ..maia.service.test_webhooks import SPEC, _change
from ..maia.service.test_webhooks import ctx as ctx
from ..maia.service.test_webhooks_admitted import call
from ..review10k.test_webhook_redeliver_backlog import _queue

PENDING = 30
FAILED = 45


async def _every(ctx: ServiceContext, body: dict[str, Any]) -> list[Any]:
    found: list[Any] = []
    cursor = None
    for _ in range(PENDING + FAILED):  # bounded: each page holds one delivery at least
        page: Any = await call(ctx, "webhooks.show", {**body, "cursor": cursor} if cursor
                               else body)  # fmt: skip
        assert len(page.deliveries) <= 20
        found += page.deliveries
        cursor = page.next_cursor
        if cursor is None:
            return found
    raise AssertionError("the cursor never ended")


async def test_every_delivery_is_reachable_and_failed_ones_by_state(ctx: ServiceContext) -> None:
    hook = (await _change(ctx, "add", {"kind": "add", "spec": SPEC})).webhook.webhook_id
    failed = await ctx.store.write(_queue(hook, 1, FAILED, refused="backlog_full"))
    await ctx.store.write(_queue(hook, FAILED + 1, PENDING))
    first: Any = await call(ctx, "webhooks.show", {"webhookId": hook})
    assert len(first.deliveries) == 20
    assert first.next_cursor is not None
    every = await _every(ctx, {"webhookId": hook})
    assert [d.state for d in every] == ["pending"] * PENDING + ["failed"] * FAILED
    assert len({d.delivery_id for d in every}) == PENDING + FAILED
    refused = await _every(ctx, {"webhookId": hook, "deliveryState": "failed"})
    assert {d.delivery_id for d in refused} == set(failed)
    assert all(d.last_reason == "backlog_full" for d in refused)
    with pytest.raises(MaiaError) as caught:  # a cursor of the unfiltered pages
        await call(ctx, "webhooks.show", {"webhookId": hook, "deliveryState": "failed",
                                          "cursor": first.next_cursor})  # fmt: skip
    assert caught.value.code == "invalid_cursor"
