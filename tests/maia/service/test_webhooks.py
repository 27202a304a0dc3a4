"""The webhook handlers on real storage: preview then confirm, refusals that change nothing,
duplicates, list and show."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import trio

from maia.config import UserConfig, WebhookSettings
from maia.core import MaiaError, SystemClock, to_json
from maia.service import ServiceContext, open_services
from maia.service._webhooks import (
    webhooks_change_confirm,
    webhooks_change_preview,
    webhooks_list,
    webhooks_show,
)
from storage import open_storage

from ._helpers import params

SPEC: dict[str, Any] = {
    "url": "http://127.0.0.1:9/in",
    "eventTypes": ["turn.completed"],
    "secretEnv": "HOOK_S",
}


@pytest.fixture
async def ctx(tmp_path: Path) -> AsyncIterator[ServiceContext]:
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    config = UserConfig(webhooks=WebhookSettings(("127.0.0.1/32",)))
    async with (
        open_storage(home / "maia.db", clock=SystemClock(), synchronous="NORMAL") as store,
        open_services(store, clock=SystemClock(), home=home, config=config) as services,
    ):
        yield services


async def _change(ctx: ServiceContext, command: str, change: dict[str, Any]) -> Any:
    """Preview then confirm, as the CLI does; returns the confirm's output."""
    body: dict[str, Any] = {"commandId": command, "change": change}
    preview = await webhooks_change_preview(ctx, params("webhooks.change.preview", body))
    proof = {"inputDigest": preview.input_digest, "previewId": preview.preview_id,
             "proof": preview.proof}  # fmt: skip
    return await webhooks_change_confirm(ctx, params("webhooks.change.confirm", body | proof))


async def test_add_then_list_and_show(ctx: ServiceContext) -> None:
    """An add previews the webhook ID it creates; the confirm stores it at revision 1."""
    body: dict[str, Any] = {"commandId": "c1", "change": {"kind": "add", "spec": SPEC}}
    preview = await webhooks_change_preview(ctx, params("webhooks.change.preview", body))
    assert preview.webhook_id.startswith("hook_")
    proof = {"inputDigest": preview.input_digest, "previewId": preview.preview_id,
             "proof": preview.proof}  # fmt: skip
    done = await webhooks_change_confirm(ctx, params("webhooks.change.confirm", body | proof))
    assert (done.delivery, done.webhook.webhook_id, done.webhook.revision) == (
        "new", preview.webhook_id, 1)  # fmt: skip
    again = await webhooks_change_confirm(ctx, params("webhooks.change.confirm", body | proof))
    assert (again.delivery, again.receipt_id) == ("duplicate", done.receipt_id)
    listed = await webhooks_list(ctx, params("webhooks.list", {}))
    assert [w.webhook_id for w in listed.webhooks] == [preview.webhook_id]
    shown = await webhooks_show(ctx, params("webhooks.show", {"webhookId": preview.webhook_id}))
    assert to_json(shown.webhook)["secretEnv"] == "HOOK_S"
    receipt = await ctx.read(lambda c: c.execute(
        "SELECT operation_id, targets FROM receipts WHERE receipt_id = ?",
        (done.receipt_id,)).fetchone())  # fmt: skip
    assert receipt[0] == "webhooks.change.confirm"
    assert b'"targetType":"webhook"' in receipt[1]


@pytest.mark.parametrize(
    "url",
    ["http://127.0.0.2:9/", "http://[::1]:9/", "http://2130706433:9/", "http://0x7f.0.0.2/",
     "http://0177.0.0.2/", "ftp://127.0.0.1/", "http://u:p@127.0.0.1:9/"],
)  # fmt: skip
async def test_refused_destination_at_add(ctx: ServiceContext, url: str) -> None:
    """A literal the rules refuse is refused at preview with the field named; nothing stored."""
    body: dict[str, Any] = {
        "commandId": "c1",
        "change": {"kind": "add", "spec": SPEC | {"url": url}},
    }
    with pytest.raises(MaiaError) as refused:
        await webhooks_change_preview(ctx, params("webhooks.change.preview", body))
    assert refused.value.code == "webhook_destination_refused"
    assert refused.value.details["path"] == "change.spec.url"
    assert (await webhooks_list(ctx, params("webhooks.list", {}))).webhooks == ()


async def test_confirm_needs_the_preview(ctx: ServiceContext) -> None:
    """A confirm with another proof or digest is refused and creates nothing."""
    body: dict[str, Any] = {"commandId": "c1", "change": {"kind": "add", "spec": SPEC}}
    preview = await webhooks_change_preview(ctx, params("webhooks.change.preview", body))
    bad = {"inputDigest": preview.input_digest, "previewId": preview.preview_id, "proof": "x"}
    with pytest.raises(MaiaError) as refused:
        await webhooks_change_confirm(ctx, params("webhooks.change.confirm", body | bad))
    assert refused.value.code == "preview_mismatch"
    other: dict[str, Any] = {
        "commandId": "c1",
        "change": {"kind": "add", "spec": SPEC | {"secretEnv": "X"}},
    }
    good = {"inputDigest": preview.input_digest, "previewId": preview.preview_id,
            "proof": preview.proof}  # fmt: skip
    with pytest.raises(MaiaError) as refused:
        await webhooks_change_confirm(ctx, params("webhooks.change.confirm", other | good))
    assert refused.value.code == "preview_mismatch"
    assert (await webhooks_list(ctx, params("webhooks.list", {}))).webhooks == ()


async def test_an_add_confirms_only_under_the_commandid_it_previewed(ctx: ServiceContext) -> None:
    """An add's proof spent under another commandId would create another webhook than the
    one its preview named: preview_mismatch, nothing added; the proof still confirms the
    preview's own commandId, which creates the webhook the preview named."""
    body: dict[str, Any] = {"commandId": "c1", "change": {"kind": "add", "spec": SPEC}}
    preview = await webhooks_change_preview(ctx, params("webhooks.change.preview", body))
    proof = {"inputDigest": preview.input_digest, "previewId": preview.preview_id,
             "proof": preview.proof}  # fmt: skip
    other = body | {"commandId": "c2"}
    with pytest.raises(MaiaError) as refused:
        await webhooks_change_confirm(ctx, params("webhooks.change.confirm", other | proof))
    assert refused.value.code == "preview_mismatch"
    assert preview.webhook_id in refused.value.message
    assert (await webhooks_list(ctx, params("webhooks.list", {}))).webhooks == ()
    done = await webhooks_change_confirm(ctx, params("webhooks.change.confirm", body | proof))
    assert (done.delivery, done.webhook.webhook_id) == ("new", preview.webhook_id)


async def test_test_then_remove_with_revisions(ctx: ServiceContext) -> None:
    """test queues a maia.ping at revision 2; a remove naming revision 1 is refused at
    preview; at revision 2 it removes the webhook and cancels the ping."""
    added = await _change(ctx, "c1", {"kind": "add", "spec": SPEC})
    hook = added.webhook.webhook_id
    tested = await _change(ctx, "c2", {"kind": "test", "webhookId": hook, "expectedRevision": 1})
    assert tested.webhook.revision == 2
    assert tested.delivery_id is not None
    stale = {"commandId": "c3", "change": {"kind": "remove", "webhookId": hook,
             "expectedRevision": 1}}  # fmt: skip
    with pytest.raises(MaiaError) as refused:
        await webhooks_change_preview(ctx, params("webhooks.change.preview", stale))
    assert refused.value.code == "revision_conflict"
    removed = await _change(ctx, "c3", {"kind": "remove", "webhookId": hook,
                                        "expectedRevision": 2})  # fmt: skip
    assert removed.webhook.state == "removed"
    shown = await webhooks_show(ctx, params("webhooks.show", {"webhookId": hook}))
    assert [(d.event_type, d.state) for d in shown.deliveries] == [("maia.ping", "cancelled")]


async def test_unknown_names_are_not_found(ctx: ServiceContext) -> None:
    """Unknown webhook and delivery IDs answer resource_not_found."""
    hook = "hook_" + "0" * 32
    with pytest.raises(MaiaError) as missing:
        await webhooks_show(ctx, params("webhooks.show", {"webhookId": hook}))
    assert missing.value.code == "resource_not_found"
    change = {"kind": "redeliver", "deliveryId": "dlv_1", "expectedRevision": 1}
    body: dict[str, Any] = {"commandId": "c1", "change": change}
    with pytest.raises(MaiaError) as missing:
        await webhooks_change_preview(ctx, params("webhooks.change.preview", body))
    assert missing.value.code == "resource_not_found"


async def test_revision_bound_by_the_preview(ctx: ServiceContext) -> None:
    """Without expectedRevision the preview binds the revision it read: a change in between
    makes the confirm a revision_conflict, and nothing is removed."""
    hook = (await _change(ctx, "c1", {"kind": "add", "spec": SPEC})).webhook.webhook_id
    body: dict[str, Any] = {"commandId": "c2", "change": {"kind": "remove", "webhookId": hook}}
    preview = await webhooks_change_preview(ctx, params("webhooks.change.preview", body))
    assert preview.revision == 1
    await _change(ctx, "c3", {"kind": "test", "webhookId": hook})
    proof = {"inputDigest": preview.input_digest, "previewId": preview.preview_id,
             "proof": preview.proof}  # fmt: skip
    with pytest.raises(MaiaError) as refused:
        await webhooks_change_confirm(ctx, params("webhooks.change.confirm", body | proof))
    assert refused.value.code == "revision_conflict"
    shown = await webhooks_show(ctx, params("webhooks.show", {"webhookId": hook}))
    assert (shown.webhook.state, shown.webhook.revision) == ("active", 2)


async def test_the_limit_is_refused_at_preview(ctx: ServiceContext) -> None:
    """Past 64 live webhooks an add is refused at its preview; a removal makes room."""
    from actors.webhook import MAX_WEBHOOKS

    hooks = [(await _change(ctx, f"a{i}", {"kind": "add", "spec": SPEC})).webhook.webhook_id
             for i in range(MAX_WEBHOOKS)]  # fmt: skip
    body: dict[str, Any] = {"commandId": "over", "change": {"kind": "add", "spec": SPEC}}
    with pytest.raises(MaiaError) as refused:
        await webhooks_change_preview(ctx, params("webhooks.change.preview", body))
    assert refused.value.code == "webhook_limit_reached"
    await _change(ctx, "r0", {"kind": "remove", "webhookId": hooks[0]})
    assert (await _change(ctx, "over", {"kind": "add", "spec": SPEC})).delivery == "new"


async def test_without_an_active_webhook_commits_cost_the_outbox_no_write(
    ctx: ServiceContext, tmp_path: Path
) -> None:
    """No webhook: commits that append events run no outbox batch (at most one per
    IDLE_ADVANCE_S, the catch-up at start); once one is added, its commits do again."""
    from actors.webhook import WEBHOOKS
    from maia.service import running_kind
    from maia.service._projects import project_add
    from maia.service._sessions import session_create, session_rename

    service = await running_kind(ctx.runtime, WEBHOOKS)  # it opens on demand: open it now
    (tmp_path / "p").mkdir()
    project = await project_add(ctx, params("project.add", {
        "commandId": "p", "rootPath": str(tmp_path / "p")}))  # fmt: skip
    made = await session_create(ctx, params("session.create", {
        "commandId": "s", "projectId": project.project.project_id}))  # fmt: skip
    session_id = made.session.session_id
    for n in range(5):
        await session_rename(ctx, params("session.rename", {
            "commandId": f"r{n}", "sessionId": session_id, "title": f"t{n}"}))  # fmt: skip
    await trio.sleep(0.5)  # let the processor see every commit
    idle = service.processed_batches
    assert idle <= 1
    await _change(ctx, "add", {"kind": "add", "spec": SPEC})
    await session_rename(ctx, params("session.rename", {
        "commandId": "r-after", "sessionId": session_id, "title": "after"}))  # fmt: skip
    for _ in range(200):  # bounded: 10 s
        if service.processed_batches > idle:
            break
        await trio.sleep(0.05)
    assert service.processed_batches > idle
