"""A retried webhooks.change.confirm (same commandId, same change) replays its receipt before
the change is judged again."""

from __future__ import annotations

from maia.service import ServiceContext

from ..maia.service.test_webhooks import SPEC
from ..maia.service.test_webhooks_admitted import admit_allow, call, preview
from ..maia.service.test_webhooks_admitted import ctx as ctx


async def test_a_retried_add_replays_after_the_allow_list_narrowed(ctx: ServiceContext) -> None:
    """An add confirmed while 127.0.0.1/32 was allowed, retried after an admission dropped
    it, answers duplicate (it was webhook_destination_refused: the URL was judged first)."""
    await admit_allow(ctx, ["127.0.0.1/32"], "cfg1")
    confirm = await preview(
        ctx, "add1", {"kind": "add", "spec": SPEC | {"secretEnv": "HOOK_SECRET"}}
    )
    done = await call(ctx, "webhooks.change.confirm", confirm)
    await admit_allow(ctx, ["10.9.9.9/32"], "cfg2")
    again = await call(ctx, "webhooks.change.confirm", confirm)
    assert (done.delivery, again.delivery) == ("new", "duplicate")
    assert (again.receipt_id, again.webhook) == (done.receipt_id, done.webhook)
