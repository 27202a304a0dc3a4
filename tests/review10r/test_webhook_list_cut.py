"""webhooks.list with includeRemoved listed the oldest 200 webhooks and said nothing of the
rest: removed webhooks stay (64 live at most, any number removed), so after 200 removals a
live webhook added since was missing from the list, with no cursor or flag saying more
exist. It now pages (limit, cursor in; nextCursor out) and every webhook is reachable by
following the cursor. Real storage, the real handlers."""

from __future__ import annotations

from typing import Any

from maia.service import ServiceContext

from ..maia.service.test_webhooks import SPEC, _change
from ..maia.service.test_webhooks import ctx as ctx
from ..maia.service.test_webhooks_admitted import call

REMOVED = 200  # the limit list_webhooks cut at before webhooks.list paged


async def _every(ctx: ServiceContext, params: dict[str, Any]) -> list[str]:
    """Every webhook ID of webhooks.list, following nextCursor to the last page."""
    found: list[str] = []
    cursor = None
    for _ in range(REMOVED):  # bounded: each page holds one webhook at least
        page: Any = await call(ctx, "webhooks.list", {**params, "cursor": cursor} if cursor
                               else params)  # fmt: skip
        found += [w.webhook_id for w in page.webhooks]
        cursor = page.next_cursor
        if cursor is None:
            return found
    raise AssertionError("the cursor never ended")


async def test_include_removed_lists_a_live_webhook_added_after_200_removals(
    ctx: ServiceContext,
) -> None:
    """The live webhook shows in the plain list and in the includeRemoved one."""
    for index in range(REMOVED):
        hook = (await _change(ctx, f"a{index}", {"kind": "add", "spec": SPEC})).webhook
        await _change(ctx, f"r{index}", {"kind": "remove", "webhookId": hook.webhook_id})
    live = (await _change(ctx, "live", {"kind": "add", "spec": SPEC})).webhook.webhook_id
    plain: Any = await call(ctx, "webhooks.list", {})
    assert [w.webhook_id for w in plain.webhooks] == [live]
    assert plain.next_cursor is None
    every = await _every(ctx, {"includeRemoved": True})
    assert len(every) == len(set(every)) == REMOVED + 1
    assert every[-1] == live  # oldest first
    assert await _every(ctx, {"includeRemoved": True, "limit": 7}) == every
