"""A retried config.admit.confirm (same commandId, same preview values) answers its stored
result, `delivery: duplicate`, before the file is read again (docs/configuration.md: "A
retried confirm ... answers the stored result"): before, the confirm rebuilt the candidate
first, so a retry after the file was edited again was refused `storage_conflict`
(file_changed), or `configuration_invalid` when the edit broke it, although the admission
it retries was done. Real storage, a real file, the handlers; as the relocate and routine
confirms already do."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import trio

from maia.config import UserConfig
from maia.protocol import MaiaError, SystemClock
from maia.service import ServiceContext, open_services
from storage import open_storage

from .test_admission_property import _call

KEYS = ("previewId", "proof", "inputDigest", "manifestDigest", "expectedRevision")


def _write(home: Path, text: str) -> None:
    (home / "config.jsonc").write_text(text)
    os.chmod(home / "config.jsonc", 0o600)


async def _admit_edit_retry(home: Path, edited: str) -> tuple[dict[str, Any], dict[str, Any]]:
    async with (
        open_storage(home / "maia.db", clock=SystemClock(), synchronous="NORMAL") as store,
        open_services(store, clock=SystemClock(), home=home, config=UserConfig()) as ctx,
    ):
        assert isinstance(ctx, ServiceContext)
        preview = await _call(ctx, "config.admit.preview", {})
        confirm = {k: preview[k] for k in KEYS} | {"commandId": "admit-1"}
        first = await _call(ctx, "config.admit.confirm", confirm)
        _write(home, edited)
        retried = await _call(ctx, "config.admit.confirm", confirm)
        with pytest.raises(MaiaError) as other:  # another command is judged on the file now
            await _call(ctx, "config.admit.confirm", confirm | {"commandId": "admit-2"})
        assert other.value.code in ("storage_conflict", "configuration_invalid")
        return first, retried


EDITS = ['{"swarm": {"capacity": {"maxLiveSessions": 4}}}', '{"swarm": ', '{"nope": 1}']


@pytest.mark.parametrize("edited", EDITS)
def test_a_retry_after_an_edit_is_a_duplicate(tmp_path: Path, edited: str) -> None:
    """Admitted, the file edited (valid or not), the same confirm again: duplicate, the same
    receipt and result; another commandId with the same values is judged on the file."""
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    _write(home, '{"swarm": {"capacity": {"maxLiveSessions": 3}}}')
    first, retried = trio.run(_admit_edit_retry, home, edited)
    assert (first["delivery"], retried["delivery"]) == ("new", "duplicate")
    assert retried["receiptId"] == first["receiptId"]
    assert retried["snapshotId"] == first["snapshotId"]
