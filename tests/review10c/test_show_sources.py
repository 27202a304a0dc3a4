"""`config.show` says `user` for a value the user file writes even when it equals the
default: before, `sessions.workerIdleMs`, `swarm.defaultTimezone` and
`webhooks.allowAddresses` said `default` whenever the value was the default one (a limit
said `user`), and an admitted `sessions.approvalTimeoutMs` was not shown at all. Real
storage, a real file, the admission and show handlers."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import trio

from maia.config import UserConfig
from maia.protocol import REGISTRY, SystemClock, decode_input, to_json
from maia.service import HANDLERS, ServiceContext, open_services
from storage import open_storage

WRITTEN = {
    "swarm": {"defaultTimezone": "UTC", "capacity": {"maxLiveSessions": 64}},
    "sessions": {"workerIdleMs": 60000, "approvalTimeoutMs": 5000},
    "webhooks": {"allowAddresses": []},
}


async def _call(ctx: ServiceContext, op_id: str, body: dict[str, Any]) -> dict[str, Any]:
    descriptor = REGISTRY.get(op_id)
    assert descriptor is not None
    return to_json(await HANDLERS[op_id](ctx, decode_input(descriptor, body)))  # type: ignore[no-any-return]


async def _admit_and_show(home: Path) -> dict[str, Any]:
    async with (
        open_storage(home / "maia.db", clock=SystemClock(), synchronous="NORMAL") as store,
        open_services(store, clock=SystemClock(), home=home, config=UserConfig()) as ctx,
    ):
        preview = await _call(ctx, "config.admit.preview", {})
        keys = ("previewId", "proof", "inputDigest", "manifestDigest", "expectedRevision")
        await _call(ctx, "config.admit.confirm", {k: preview[k] for k in keys} | {"commandId": "c"})
        return (await _call(ctx, "config.show", {}))["effective"]  # type: ignore[no-any-return]


def test_written_defaults_are_the_users(tmp_path: Path) -> None:
    """Each key the file writes is `user`, its value as written; an unwritten one `default`."""
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    (home / "config.jsonc").write_text(json.dumps(WRITTEN))
    os.chmod(home / "config.jsonc", 0o600)
    effective = trio.run(_admit_and_show, home)
    shown = [("swarm.defaultTimezone", "UTC"), ("sessions.workerIdleMs", 60000),
             ("webhooks.allowAddresses", []), ("sessions.approvalTimeoutMs", 5000)]  # fmt: skip
    for key, value in shown:
        assert effective[key] == {"value": value, "source": "user"}, key
    assert effective["swarm.capacity"]["maxLiveSessions"]["source"] == "user"
    assert effective["swarm.capacity"]["maxAgentDepth"]["source"] == "default"


def test_unwritten_keys_are_defaults(tmp_path: Path) -> None:
    """An empty file: every such key `default`, and no approval timeout is shown."""
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    (home / "config.jsonc").write_text("{}")
    os.chmod(home / "config.jsonc", 0o600)
    effective = trio.run(_admit_and_show, home)
    for key in ("swarm.defaultTimezone", "sessions.workerIdleMs", "webhooks.allowAddresses"):
        assert effective[key]["source"] == "default", key
    assert "sessions.approvalTimeoutMs" not in effective
