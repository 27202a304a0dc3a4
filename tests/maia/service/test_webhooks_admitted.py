"""Webhook URL checks read the admitted configuration: a `webhooks.allowAddresses` admitted
while the Node runs applies at once to previews, confirms and deliveries (a real receiver on
127.0.0.1, a connector that cannot leave loopback), and one admission narrowing it refuses a
confirm previewed before."""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import trio

from actors.webhook import HttpxClient
from maia.config import UserConfig
from maia.core import MaiaError, SystemClock
from maia.service import HANDLERS, ServiceContext, open_services
from storage import open_storage

from ...actors.webhook._receiver import LoopbackOnlyConnector, Receiver
from ._helpers import params

SECRET = "whsec_" + base64.b64encode(b"a" * 32).decode()
BOUND_S = 30.0


@pytest.fixture
async def ctx(tmp_path: Path) -> AsyncIterator[ServiceContext]:
    """A Node started with no allowAddresses (loopback refused)."""
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    options = {"webhook.client": HttpxClient(LoopbackOnlyConnector())}
    async with (
        open_storage(home / "maia.db", clock=SystemClock(), synchronous="NORMAL") as store,
        open_services(store, clock=SystemClock(), home=home, config=UserConfig(),
                      environ={"HOOK_SECRET": SECRET}, options=options) as services,
    ):  # fmt: skip
        yield services


async def call(ctx: ServiceContext, op_id: str, body: dict[str, Any]) -> Any:
    return await HANDLERS[op_id](ctx, params(op_id, body))


async def admit_allow(ctx: ServiceContext, cidrs: list[str], command: str) -> None:
    """Write config.jsonc with these allowAddresses and admit it."""
    (ctx.home / "config.jsonc").write_text(json.dumps({"webhooks": {"allowAddresses": cidrs}}))
    preview = await call(ctx, "config.admit.preview", {})
    await call(ctx, "config.admit.confirm", {
        "commandId": command, "previewId": preview.preview_id, "proof": preview.proof,
        "inputDigest": preview.input_digest, "manifestDigest": preview.manifest_digest,
        "expectedRevision": preview.expected_revision})  # fmt: skip


async def preview(ctx: ServiceContext, command: str, change: dict[str, Any]) -> dict[str, Any]:
    body = {"commandId": command, "change": change}
    out = await call(ctx, "webhooks.change.preview", body)
    return body | {"inputDigest": out.input_digest, "previewId": out.preview_id,
                   "proof": out.proof}  # fmt: skip


async def test_an_admitted_allow_list_applies_without_a_restart(
    ctx: ServiceContext, nursery: trio.Nursery
) -> None:
    """Loopback is refused at the start; after admitting 127.0.0.1/32 the same add previews,
    confirms, and its test delivery reaches the receiver."""
    receiver = Receiver(secret=SECRET)
    await nursery.start(receiver.serve)
    spec = {"url": f"http://127.0.0.1:{receiver.port}/in", "eventTypes": ["turn.completed"],
            "secretEnv": "HOOK_SECRET"}  # fmt: skip
    with pytest.raises(MaiaError) as refused:
        await preview(ctx, "a1", {"kind": "add", "spec": spec})
    assert refused.value.code == "webhook_destination_refused"
    await admit_allow(ctx, ["127.0.0.1/32"], "cfg1")
    added = await call(ctx, "webhooks.change.confirm",
                       await preview(ctx, "a1", {"kind": "add", "spec": spec}))  # fmt: skip
    hook = added.webhook.webhook_id
    await call(ctx, "webhooks.change.confirm",
               await preview(ctx, "t1", {"kind": "test", "webhookId": hook}))  # fmt: skip
    await receiver.wait_for(1, BOUND_S)
    assert receiver.received[0].verified is True


async def test_a_narrowing_admission_refuses_a_confirm_previewed_before(
    ctx: ServiceContext,
) -> None:
    """An add previewed under an admitted 192.0.2.0/24 is refused at its confirm once an
    admission dropped it (the field named), and nothing is stored."""
    await admit_allow(ctx, ["192.0.2.0/24"], "cfg1")
    spec = {"url": "http://192.0.2.1/in", "eventTypes": ["turn.completed"],
            "secretEnv": "HOOK_SECRET"}  # fmt: skip
    body = await preview(ctx, "a1", {"kind": "add", "spec": spec})
    await admit_allow(ctx, [], "cfg2")
    with pytest.raises(MaiaError) as refused:
        await call(ctx, "webhooks.change.confirm", body)
    assert refused.value.code == "webhook_destination_refused"
    assert refused.value.details["path"] == "change.spec.url"
    assert (await call(ctx, "webhooks.list", {})).webhooks == ()


async def test_a_preview_under_a_command_id_that_confirmed_another_change(
    ctx: ServiceContext,
) -> None:
    """A preview whose commandId already confirmed another change answers
    idempotency_conflict and issues no proof; the same change previews again."""
    await admit_allow(ctx, ["192.0.2.0/24"], "cfg1")
    spec = {"url": "http://192.0.2.1/in", "eventTypes": ["machine.recovery_required"],
            "secretEnv": "HOOK_SECRET"}  # fmt: skip
    await call(ctx, "webhooks.change.confirm", await preview(ctx, "a1", {"kind": "add",
                                                                       "spec": spec}))  # fmt: skip
    count = await ctx.read(lambda c: c.execute("SELECT count(*) FROM previews").fetchone()[0])
    other = {"kind": "add", "spec": spec | {"url": "http://192.0.2.2/in"}}
    with pytest.raises(MaiaError) as refused:
        await preview(ctx, "a1", other)
    assert refused.value.code == "idempotency_conflict"
    assert refused.value.details["commandId"] == "a1"
    assert await ctx.read(lambda c: c.execute("SELECT count(*) FROM previews").fetchone()[0]) == (
        count)  # fmt: skip
    again = await call(ctx, "webhooks.change.confirm",
                       await preview(ctx, "a1", {"kind": "add", "spec": spec}))  # fmt: skip
    assert again.delivery == "duplicate"


async def test_a_retried_add_previews_after_a_narrowing_admission(ctx: ServiceContext) -> None:
    """An add its commandId confirmed previews again after an admission dropped its address
    (it is not judged again), naming the webhook it made, and the confirm answers the stored
    result: `maia webhook add --command-id C --yes` run twice exits 0. A new commandId with
    that change is refused as before."""
    await admit_allow(ctx, ["192.0.2.0/24"], "cfg1")
    spec = {"url": "http://192.0.2.1/in", "eventTypes": ["turn.completed"],
            "secretEnv": "HOOK_SECRET"}  # fmt: skip
    change = {"kind": "add", "spec": spec}
    made = await call(ctx, "webhooks.change.confirm", await preview(ctx, "a1", change))
    await admit_allow(ctx, [], "cfg2")
    again = await call(ctx, "webhooks.change.preview", {"commandId": "a1", "change": change})
    assert (again.webhook_id, again.url) == (made.webhook.webhook_id, spec["url"])
    body = {"commandId": "a1", "change": change, "inputDigest": again.input_digest,
            "previewId": again.preview_id, "proof": again.proof}  # fmt: skip
    replayed = await call(ctx, "webhooks.change.confirm", body)
    assert (replayed.delivery, replayed.receipt_id) == ("duplicate", made.receipt_id)
    with pytest.raises(MaiaError) as refused:
        await preview(ctx, "a2", change)
    assert refused.value.code == "webhook_destination_refused"
