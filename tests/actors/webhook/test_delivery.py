"""Deliveries end to end inside one process: real storage, the real runtime and webhook kind,
a real HTTP receiver on 127.0.0.1 (allow-listed) that verifies every delivery with the
standardwebhooks library, and a connector that cannot leave loopback."""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import attrs
import pytest
import trio

from actors.webhook import HttpxClient
from maia.config import UserConfig, WebhookSettings
from maia.core import SystemClock
from maia.service import ServiceContext, open_services
from maia.service._webhooks import (
    webhooks_change_confirm,
    webhooks_change_preview,
    webhooks_show,
)
from storage import append_event, open_storage, read_events

from ...maia.service._helpers import params
from ._receiver import LoopbackOnlyConnector, Receiver, static_resolver

SECRET = "whsec_" + base64.b64encode(b"s" * 32).decode()
BOUND_S = 30.0


@attrs.define
class World:
    ctx: ServiceContext
    connector: LoopbackOnlyConnector
    nursery: trio.Nursery
    commands: int = 0

    async def change(self, change: dict[str, Any]) -> Any:
        """Preview then confirm one change (as the CLI does)."""
        self.commands += 1
        body: dict[str, Any] = {"commandId": f"c{self.commands}", "change": change}
        preview = await webhooks_change_preview(self.ctx, params("webhooks.change.preview", body))
        proof = {"inputDigest": preview.input_digest, "previewId": preview.preview_id,
                 "proof": preview.proof}  # fmt: skip
        confirm = params("webhooks.change.confirm", body | proof)
        return await webhooks_change_confirm(self.ctx, confirm)

    async def add(self, receiver: Receiver, types: tuple[str, ...] = ("turn.completed",),
                  url: str | None = None, secret_env: str = "HOOK_SECRET") -> str:  # fmt: skip
        if receiver.port == 0:
            await self.nursery.start(receiver.serve)
        spec = {"url": url or f"http://127.0.0.1:{receiver.port}/in",
                "eventTypes": list(types), "secretEnv": secret_env}  # fmt: skip
        return str((await self.change({"kind": "add", "spec": spec})).webhook.webhook_id)

    async def event(self, event_type: str = "turn.completed") -> None:
        await self.ctx.store.write(lambda c: append_event(
            c, owner_id="session_1", event_type=event_type, payload={"turnId": "turn_1"},
            now_ms=self.ctx.now(), session_id="session_1"))  # fmt: skip

    async def show(self, hook: str) -> Any:
        return await webhooks_show(self.ctx, params("webhooks.show", {"webhookId": hook}))

    async def wait_attempts(self, hook: str, count: int) -> Any:
        """Wait (bounded) until the newest delivery of `hook` recorded `count` attempts."""
        with trio.fail_after(BOUND_S):
            while True:
                shown = await self.show(hook)
                if shown.deliveries and shown.deliveries[0].attempts >= count:
                    return shown
                await trio.sleep(0.05)

    async def wait_state(self, hook: str, state: str, count: int = 1) -> Any:
        """Wait (bounded) until `count` deliveries of `hook` are in `state`."""
        with trio.fail_after(BOUND_S):
            while True:
                shown = await self.show(hook)
                if sum(d.state == state for d in shown.deliveries) >= count:
                    return shown
                await trio.sleep(0.05)


@pytest.fixture
async def world(tmp_path: Path, nursery: trio.Nursery) -> AsyncIterator[World]:
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    config = UserConfig(webhooks=WebhookSettings(("127.0.0.1/32",)))
    connector = LoopbackOnlyConnector()
    options = {"webhook.client": HttpxClient(connector),
               "webhook.resolver": static_resolver({"elsewhere.test": ["127.0.0.2"]})}  # fmt: skip
    async with (
        open_storage(home / "maia.db", clock=SystemClock(), synchronous="NORMAL") as store,
        open_services(store, clock=SystemClock(), home=home, config=config,
                      environ={"HOOK_SECRET": SECRET}, options=options) as ctx,
    ):  # fmt: skip
        yield World(ctx, connector, nursery)


async def test_a_journal_event_is_delivered_signed(world: World) -> None:
    """A matching event reaches the receiver once, verified by standardwebhooks; show says
    succeeded with one attempt."""
    receiver = Receiver(secret=SECRET)
    hook = await world.add(receiver)
    await world.event("turn.started")  # not asked for
    await world.event("turn.completed")
    await receiver.wait_for(1, BOUND_S)
    shown = await world.wait_state(hook, "succeeded")
    got = receiver.received[0]
    assert got.verified is True
    assert got.headers["webhook-id"] == shown.deliveries[0].message_id
    assert [a.outcome for a in shown.deliveries[0].attempt_log] == ["succeeded"]
    assert len(receiver.received) == 1


async def test_ping_then_redeliver_keeps_the_webhook_id(world: World) -> None:
    """test sends maia.ping; redeliver sends it again with the same webhook-id."""
    receiver = Receiver(secret=SECRET)
    hook = await world.add(receiver)
    tested = await world.change({"kind": "test", "webhookId": hook, "expectedRevision": 1})
    await world.wait_state(hook, "succeeded")
    await world.change({"kind": "redeliver", "deliveryId": tested.delivery_id,
                        "expectedRevision": 2})  # fmt: skip
    await receiver.wait_for(2, BOUND_S)
    first, second = receiver.received
    assert first.verified
    assert second.verified
    assert first.headers["webhook-id"] == second.headers["webhook-id"]
    assert b'"type":"maia.ping"' in first.body


async def test_a_failure_is_retried_on_the_schedule(world: World) -> None:
    """A 500 is retried after the schedule's 5 s with the same webhook-id; then succeeds."""
    receiver = Receiver(script=[500, 204], secret=SECRET)
    hook = await world.add(receiver)
    await world.event()
    await receiver.wait_for(1, BOUND_S)
    pending = await world.wait_attempts(hook, 1)
    assert pending.deliveries[0].state == "pending"
    assert pending.deliveries[0].last_status_code == 500
    await receiver.wait_for(2, BOUND_S)
    shown = await world.wait_state(hook, "succeeded")
    first, second = receiver.received
    assert first.headers["webhook-id"] == second.headers["webhook-id"]
    assert [a.status_code for a in shown.deliveries[0].attempt_log] == [500, 204]


async def test_410_disables_the_webhook(world: World) -> None:
    """A 410 fails the delivery and disables the webhook; later events are not queued."""
    receiver = Receiver(script=[410])
    hook = await world.add(receiver)
    await world.event()
    shown = await world.wait_state(hook, "failed")
    with trio.fail_after(BOUND_S):
        while shown.webhook.state != "disabled":
            await trio.sleep(0.05)
            shown = await world.show(hook)
    await world.event()
    await trio.sleep(0.3)
    assert len((await world.show(hook)).deliveries) == 1
    # the disable is caused by the delivered event, in that event's correlation
    page = await world.ctx.store.read(
        lambda c: read_events(c, event_types=["webhook.disabled", "turn.completed"])
    )
    delivered, disabled = (
        page.events[0],
        next(e for e in page.events if e.event_type == "webhook.disabled"),
    )
    assert disabled.causation_id == delivered.event_id
    assert disabled.correlation_id == delivered.correlation_id


async def test_missing_secret_fails_the_attempt_with_a_reason(world: World) -> None:
    """A secret variable the Node does not have fails that attempt, named, and nothing is sent."""
    receiver = Receiver()
    hook = await world.add(receiver, secret_env="NOT_SET_ANYWHERE")
    await world.event()
    delivery = (await world.wait_attempts(hook, 1)).deliveries[0]
    assert delivery.state == "pending"
    assert delivery.last_reason is not None
    assert delivery.last_reason.startswith("secret_missing")
    assert receiver.received == []


async def test_a_name_resolving_off_the_allow_list_is_refused_at_delivery(world: World) -> None:
    """A name resolving to 127.0.0.2 (loopback, not allowed) is refused after resolution and
    nothing is dialled."""
    receiver = Receiver()
    await world.nursery.start(receiver.serve)
    hook = await world.add(receiver, url=f"http://elsewhere.test:{receiver.port}/")
    await world.event()
    delivery = (await world.wait_attempts(hook, 1)).deliveries[0]
    assert delivery.last_reason is not None
    assert delivery.last_reason.startswith("destination_refused")
    assert world.connector.attempts == []


async def test_a_hanging_receiver_delays_nobody_else(world: World) -> None:
    """While one receiver never answers, another webhook's delivery and journal writes go on
    (bounded waits: neither waits for the hanging attempt's 15 s bound)."""
    hanging, healthy = Receiver(script=[None]), Receiver(secret=SECRET)
    await world.add(hanging)
    await world.add(healthy)
    await world.event()
    await hanging.wait_for(1, BOUND_S)
    with trio.fail_after(10):  # inside the hanging attempt's 15 s bound
        await healthy.wait_for(1, 10)
        await world.event()  # the journal takes writes while the attempt hangs
        await healthy.wait_for(2, 10)
    assert len(hanging.received) == 1  # still the first attempt: it has not ended
