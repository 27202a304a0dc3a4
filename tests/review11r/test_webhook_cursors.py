"""webhooks.show and webhooks.list cursors an attacker or a confused script may send: forged
(junk, empty, huge, a valid cursor with its payload altered), another webhook's, the other
operation's, another list filter's. Each is refused `invalid_cursor` (never a crash, never
a page of something else). Real storage, the real handlers."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from maia.core import MaiaError
from maia.service import ServiceContext

from ..maia.service.test_webhooks import SPEC, _change
from ..maia.service.test_webhooks import ctx as ctx
from ..maia.service.test_webhooks_admitted import call
from ..review10k.test_webhook_redeliver_backlog import _queue


def _altered(cursor: str) -> str:
    """`cursor` with the position in its payload changed (its MAC kept)."""
    head, payload, *rest = cursor.split(".")
    raw = base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4))
    changed = raw.replace(b"[", b"[9", 1) if b"[" in raw else raw + b"0"
    text = base64.urlsafe_b64encode(changed).rstrip(b"=").decode()
    return ".".join([head, text, *rest])


async def _refused(ctx: ServiceContext, method: str, body: dict[str, Any]) -> str:
    with pytest.raises(MaiaError) as caught:
        await call(ctx, method, body)
    return caught.value.code


async def test_forged_and_foreign_cursors_are_refused(ctx: ServiceContext) -> None:
    one = (await _change(ctx, "add", {"kind": "add", "spec": SPEC})).webhook.webhook_id
    two = (await _change(ctx, "add2", {"kind": "add", "spec": {**SPEC, "url": SPEC["url"] + "2"}}
                         )).webhook.webhook_id  # fmt: skip
    await ctx.store.write(_queue(one, 1, 25))
    await ctx.store.write(_queue(two, 26, 25))
    shown: Any = await call(ctx, "webhooks.show", {"webhookId": one})
    assert shown.next_cursor is not None
    listed: Any = await call(ctx, "webhooks.list", {"limit": 1})
    assert listed.next_cursor is not None
    junk = ["", "x", ".", "..", "a.b.c", "!!!.@@@.###", "A" * 100_000, shown.next_cursor + "A",
            _altered(shown.next_cursor), "\x00" * 10, "é.é.é"]  # fmt: skip
    for cursor in junk:
        code = await _refused(ctx, "webhooks.show", {"webhookId": one, "cursor": cursor})
        assert code in ("invalid_cursor", "validation_failed"), (cursor[:20], code)
        code = await _refused(ctx, "webhooks.list", {"cursor": cursor})
        assert code in ("invalid_cursor", "validation_failed"), (cursor[:20], code)
    # another webhook's, the other operation's, another filter's
    assert await _refused(ctx, "webhooks.show", {"webhookId": two, "cursor": shown.next_cursor}
                          ) == "invalid_cursor"  # fmt: skip
    assert await _refused(ctx, "webhooks.show", {"webhookId": one, "cursor": listed.next_cursor}
                          ) == "invalid_cursor"  # fmt: skip
    assert await _refused(ctx, "webhooks.list", {"cursor": shown.next_cursor}) == "invalid_cursor"
    other = {"cursor": listed.next_cursor, "includeRemoved": True}
    assert await _refused(ctx, "webhooks.list", other) == "invalid_cursor"
    # the genuine cursors still work, and page the right webhook
    again: Any = await call(ctx, "webhooks.show", {"webhookId": one, "cursor": shown.next_cursor})
    assert len(again.deliveries) == 5
    assert not {d.delivery_id for d in again.deliveries} & {d.delivery_id for d in shown.deliveries}
    rest: Any = await call(ctx, "webhooks.list", {"limit": 1, "cursor": listed.next_cursor})
    assert [w.webhook_id for w in rest.webhooks] == [two]


async def test_list_pages_with_adds_and_removes_between_them(ctx: ServiceContext) -> None:
    """Between pages a seen and an unseen webhook are removed and one is added: each webhook
    alive throughout appears once, the unseen removed one not at all, the new one once (at
    the end: oldest first), none twice."""

    async def add(n: int) -> str:
        spec = {**SPEC, "url": f"{SPEC['url']}{n}"}
        return str((await _change(ctx, f"a{n}", {"kind": "add", "spec": spec})).webhook.webhook_id)

    hooks = [await add(n) for n in range(7)]
    first: Any = await call(ctx, "webhooks.list", {"limit": 2})
    seen = [w.webhook_id for w in first.webhooks]
    assert seen == hooks[:2]
    await _change(ctx, "r0", {"kind": "remove", "webhookId": hooks[0]})
    await _change(ctx, "r3", {"kind": "remove", "webhookId": hooks[3]})
    new = await add(99)
    cursor = first.next_cursor
    while cursor is not None:
        page: Any = await call(ctx, "webhooks.list", {"limit": 2, "cursor": cursor})
        seen += [w.webhook_id for w in page.webhooks]
        cursor = page.next_cursor
    assert seen == [*hooks[:3], *hooks[4:], new]
