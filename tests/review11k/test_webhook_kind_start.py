"""The webhook kind opened at every Node start once any webhook had ever been added: removed
webhooks stay, so the kind's tables always held a row, and each start imported the kind,
ran its recovery write, started its registry and outbox processor, and read its pending
deliveries, all for nothing. It now opens at the start only when a webhook is active (the
only kind with deliveries to send or events to take), else at its first operation; a
restart with an active webhook still opens it (its pending deliveries are sent: the real
Node's SIGKILL test, tests/actors/webhook/test_node_e2e.py). Real storage, the real
handlers, a restart by closing and opening the services on the same database."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from maia.config import UserConfig, WebhookSettings
from maia.core import SystemClock
from maia.service import ServiceContext, open_services
from maia.service._kinds import is_open
from storage import open_storage

from ..maia.service.test_webhooks import SPEC, _change
from ..maia.service.test_webhooks_admitted import call


@asynccontextmanager
async def _node(home: Path) -> AsyncIterator[ServiceContext]:
    config = UserConfig(webhooks=WebhookSettings(("127.0.0.1/32",)))
    async with (
        open_storage(home / "maia.db", clock=SystemClock(), synchronous="NORMAL") as store,
        open_services(store, clock=SystemClock(), home=home, config=config) as services,
    ):
        yield services


async def test_removed_webhooks_leave_the_kind_closed_at_the_start(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    async with _node(home) as ctx:
        hook = (await _change(ctx, "a", {"kind": "add", "spec": SPEC})).webhook.webhook_id
        await _change(ctx, "r", {"kind": "remove", "webhookId": hook})
        assert is_open(ctx.runtime, "webhook")
    async with _node(home) as ctx:
        assert not is_open(ctx.runtime, "webhook")
        listed: Any = await call(ctx, "webhooks.list", {"includeRemoved": True})
        assert [w.state for w in listed.webhooks] == ["removed"]
        added = await _change(ctx, "b", {"kind": "add", "spec": SPEC})  # opens it
        assert is_open(ctx.runtime, "webhook")
        await _change(ctx, "t", {"kind": "test", "webhookId": added.webhook.webhook_id})
    async with _node(home) as ctx:  # an active webhook (a pending ping): opened at the start
        assert is_open(ctx.runtime, "webhook")
