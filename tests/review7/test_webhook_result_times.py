"""A webhook change's answer is the webhook as stored: its createdAt and updatedAt are the
ones `webhooks.show` and `webhooks.list` report, and a change that moves the revision moves
updatedAt (before: the answer carried the times the actor built the record with, not the
commit's, and the ones of revision 1 after a test or a remove)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import attrs
import pytest

from maia.config import UserConfig, WebhookSettings
from maia.core import SystemClock, to_json
from maia.protocol import REGISTRY, decode_input
from maia.service import ServiceContext, open_services
from maia.service._webhooks import (
    webhooks_change_confirm,
    webhooks_change_preview,
    webhooks_list,
    webhooks_show,
)
from storage import open_storage

SPEC: dict[str, Any] = {
    "url": "http://127.0.0.1:9/in",
    "eventTypes": ["turn.completed"],
    "secretEnv": "HOOK_S",
}


@attrs.define
class TickingClock:
    """The real monotonic reading; a wall clock that moves 1 ms at every reading, so each
    place that reads the time gets its own millisecond (deterministic, not timing)."""

    wall: int = 1_764_460_800_000
    real: SystemClock = attrs.field(factory=SystemClock)

    def wall_ms(self) -> int:
        self.wall += 1
        return self.wall

    def monotonic_ms(self) -> int:
        return self.real.monotonic_ms()

    @property
    def suspend_aware(self) -> bool:
        return self.real.suspend_aware


def _params(op_id: str, body: dict[str, Any]) -> Any:
    descriptor = REGISTRY.get(op_id)
    assert descriptor is not None
    return decode_input(descriptor, body)


@pytest.fixture
async def ctx(tmp_path: Path) -> AsyncIterator[ServiceContext]:
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    clock = TickingClock()
    config = UserConfig(webhooks=WebhookSettings(("127.0.0.1/32",)))
    async with (
        open_storage(home / "maia.db", clock=clock, synchronous="NORMAL") as store,
        open_services(store, clock=clock, home=home, config=config) as services,
    ):
        yield services


async def _change(ctx: ServiceContext, command: str, change: dict[str, Any]) -> dict[str, Any]:
    body: dict[str, Any] = {"commandId": command, "change": change}
    preview = await webhooks_change_preview(ctx, _params("webhooks.change.preview", body))
    proof = {"inputDigest": preview.input_digest, "previewId": preview.preview_id,
             "proof": preview.proof}  # fmt: skip
    done = await webhooks_change_confirm(ctx, _params("webhooks.change.confirm", body | proof))
    return dict(to_json(done.webhook))


async def _shown(ctx: ServiceContext, hook: str) -> dict[str, Any]:
    shown = await webhooks_show(ctx, _params("webhooks.show", {"webhookId": hook}))
    return dict(to_json(shown.webhook))


def _times(wire: dict[str, Any]) -> tuple[Any, ...]:
    return wire["revision"], wire["createdAt"], wire["updatedAt"]


async def test_each_change_answers_the_stored_times(ctx: ServiceContext) -> None:
    """add, test and remove answer the createdAt and updatedAt that show and list read."""
    added = await _change(ctx, "c1", {"kind": "add", "spec": SPEC})
    hook = added["webhookId"]
    assert _times(added) == _times(await _shown(ctx, hook))
    tested = await _change(ctx, "c2", {"kind": "test", "webhookId": hook, "expectedRevision": 1})
    assert _times(tested) == _times(await _shown(ctx, hook))
    assert tested["updatedAt"] > added["updatedAt"]
    removed = await _change(ctx, "c3", {"kind": "remove", "webhookId": hook,
                                        "expectedRevision": 2})  # fmt: skip
    assert _times(removed) == _times(await _shown(ctx, hook))
    assert removed["updatedAt"] > tested["updatedAt"]
    listed = await webhooks_list(ctx, _params("webhooks.list", {"includeRemoved": True}))
    assert [_times(dict(to_json(w))) for w in listed.webhooks] == [_times(removed)]
