"""webhooks.list pages under the 1 MiB frame, on real storage with the real webhook kind.

At the protocol's limits a webhook is at most about 7 KB as JSON (a 2,048-character URL of
characters JSON escapes, 32 of the longest event types, a 256-character description of
control characters, a 128-character variable name), so a page of `limit` 100 stays near
700 KB: under the 960 KiB page budget, the byte cut is never reached at the real budget. A
test holds that bound (100 of the widest webhooks, one page, under 1 MiB, each counted from
above); the cut itself is run with the list's budget lowered (`LIST_BUDGET_BYTES`): pages
end before `limit` with `nextCursor`, and following it lists every webhook exactly once.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from actors.webhook import MAX_WEBHOOKS
from maia.core import MaiaError, to_json
from maia.protocol import WebhookListOutput
from maia.service import ServiceContext, _webhooks
from maia.service._event_types import journal_event_types
from maia.service._page_bytes import PAGE_BUDGET_BYTES, webhook_bytes
from maia.service._webhooks import (
    webhooks_list,
)

from ._helpers import params
from .test_webhooks import _change

BOUND = 1_048_576
# The widest a webhook gets: a public literal (an add resolves nothing and sends nothing),
# then backslashes (kept as they are by the URL parser, two bytes each as JSON) up to 2,048.
BASE = "http://93.184.215.14/"
WIDE_URL = BASE + "\\" * (2048 - len(BASE))
WIDE_TYPES = sorted((t for t in journal_event_types() if not t.startswith("webhook.")),
                    key=len, reverse=True)[:32]  # fmt: skip
WIDE_DESCRIPTION = "\x01" * 256  # 6 bytes each as JSON
WIDE_SECRET_ENV = "H" * 128


def _spec(index: int) -> dict[str, Any]:
    return {"url": f"{WIDE_URL[:-4]}{index:04d}", "eventTypes": WIDE_TYPES,
            "secretEnv": WIDE_SECRET_ENV, "description": WIDE_DESCRIPTION}  # fmt: skip


async def _wide_webhooks(ctx: ServiceContext, count: int) -> list[str]:
    """`count` of the widest webhooks, oldest first; past the live limit the older ones are
    removed (a removed webhook is listed with includeRemoved, and says why)."""
    ids: list[str] = []
    for index in range(count):
        if index >= MAX_WEBHOOKS:
            gone = ids[index - MAX_WEBHOOKS]
            await _change(ctx, f"r{index}", {"kind": "remove", "webhookId": gone})
        added = await _change(ctx, f"a{index}", {"kind": "add", "spec": _spec(index)})
        ids.append(added.webhook.webhook_id)
    return ids


async def _pages(ctx: ServiceContext, body: dict[str, Any]) -> list[WebhookListOutput]:
    pages: list[WebhookListOutput] = []
    while len(pages) < 50:
        page = await webhooks_list(ctx, params("webhooks.list", body))
        pages.append(page)
        if page.next_cursor is None:
            return pages
        body = {**body, "cursor": page.next_cursor}
    raise AssertionError("the pages never ended")


def _size(value: Any) -> int:
    return len(orjson.dumps(to_json(value)))


async def test_a_page_of_the_widest_webhooks_fits_the_frame_uncut(ctx: ServiceContext) -> None:
    """100 of the widest webhooks are one page of `limit` 100 (no byte cut), under 1 MiB,
    each counted from above; the 101st is on the next page."""
    ids = await _wide_webhooks(ctx, 101)
    pages = await _pages(ctx, {"includeRemoved": True, "limit": 100})
    assert [len(page.webhooks) for page in pages] == [100, 1]
    assert [w.webhook_id for page in pages for w in page.webhooks] == ids
    assert _size(pages[0]) < PAGE_BUDGET_BYTES < BOUND
    for webhook in pages[0].webhooks:
        wire = to_json(webhook)
        assert webhook_bytes(wire) >= _size(webhook)
        assert _size(webhook) > 6000  # as wide as the limits allow (not a thin case)


async def test_the_byte_cut_ends_pages_before_the_limit(
    ctx: ServiceContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the list's budget at 64 KiB, pages of `limit` 100 are cut after the last webhook
    that fits (nextCursor), each under the budget, and the pages list every webhook once,
    oldest first, live and removed alike."""
    budget = 64 * 1024
    monkeypatch.setattr(_webhooks, "LIST_BUDGET_BYTES", budget)
    ids = await _wide_webhooks(ctx, 70)
    pages = await _pages(ctx, {"includeRemoved": True, "limit": 100})
    counts = [len(page.webhooks) for page in pages]
    assert len(pages) > 1, counts
    assert all(0 < n < 100 for n in counts), counts
    assert all(page.next_cursor is not None for page in pages[:-1])
    assert pages[-1].next_cursor is None
    assert [w.webhook_id for page in pages for w in page.webhooks] == ids
    assert all(_size(page) < budget for page in pages), [_size(page) for page in pages]
    live = await _pages(ctx, {"limit": 100})
    assert [w.webhook_id for page in live for w in page.webhooks] == ids[-MAX_WEBHOOKS:]
    assert len(live) > 1


async def test_a_url_the_parser_lengthens_past_the_limit_is_refused(ctx: ServiceContext) -> None:
    """A URL of 2,048 characters or fewer that percent-encoding makes longer (each `"` is
    `%22`) is refused `webhook_destination_refused` (`url_invalid`) at the preview, naming
    `change.spec.url`: it was refused `validation_failed` naming `url`, a field of the
    preview's own answer (which, like every webhook the Node returns, holds at most 2,048
    characters), not of the request."""
    url = BASE + '"' * 700  # 721 characters as given, 2,121 as parsed
    with pytest.raises(MaiaError) as refused:
        await _change(ctx, "long", {"kind": "add", "spec": {**_spec(0), "url": url}})
    assert refused.value.code == "webhook_destination_refused"
    assert refused.value.details == {"path": "change.spec.url", "reason": "url_invalid"}
    assert "percent-encoded" in refused.value.message
    listed = await webhooks_list(ctx, params("webhooks.list", {}))
    assert listed.webhooks == ()
