"""A webhooks.change.confirm retried while the first is still in flight (same commandId,
same change): the retry must get the first one's result, `duplicate` (docs/webhooks.md:
a retried confirm replays its receipt before the change is judged again). The retry's
receipt look-up runs before the first commits, its later reads after: held there by a
wrapper around the preview's revision read (the only fake; real storage, real handlers).
The routine confirm's same race is a defect (test_confirm_retry_in_flight); this one holds."""

from __future__ import annotations

import threading
from typing import Any

import pytest
import trio

from actors.webhook import preview_revision
from maia.core import MaiaError
from maia.service import ServiceContext, _webhooks

from ..maia.service.test_webhooks import SPEC, _change
from ..maia.service.test_webhooks import ctx as ctx
from ..maia.service.test_webhooks_admitted import call, preview

BOUND_S = 60


async def test_a_remove_retried_while_the_first_confirm_commits_is_a_duplicate(
    ctx: ServiceContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first removes the webhook; its retry answers duplicate with the same receipt."""
    hook = (await _change(ctx, "add", {"kind": "add", "spec": SPEC})).webhook.webhook_id
    confirm = await preview(ctx, "rm", {"kind": "remove", "webhookId": hook})
    read = preview_revision
    first_done = threading.Event()
    calls = 0

    def held_read(conn: Any, preview_id: str) -> int | None:
        nonlocal calls
        calls += 1
        if calls == 1:  # the retry's read: one of the storage's two reader threads waits
            first_done.wait(BOUND_S)
        return read(conn, preview_id)

    monkeypatch.setattr(_webhooks, "preview_revision", held_read)
    answers: list[Any] = [None, None]

    async def confirm_once(index: int) -> None:
        try:
            answers[index] = await call(ctx, "webhooks.change.confirm", confirm)
        except MaiaError as error:
            answers[index] = error
        if index == 0:
            first_done.set()

    with trio.fail_after(BOUND_S):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(confirm_once, 1)
            while calls < 1:  # noqa: ASYNC110 (the retry reached its hold)
                await trio.sleep(0.01)
            nursery.start_soon(confirm_once, 0)
    first, retry = answers
    assert not isinstance(first, MaiaError), first
    assert first.delivery == "new"
    assert not isinstance(retry, MaiaError), retry
    assert (retry.delivery, retry.receipt_id) == ("duplicate", first.receipt_id)
