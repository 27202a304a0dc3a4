"""A retried project.relocate.confirm replays its receipt before the root is resolved and
judged again: after the move the checkout may be on another branch, or the folder gone,
and the retry was preview_mismatch or configuration_invalid instead of duplicate."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from maia.protocol import MaiaError
from maia.service import ServiceContext

from ..maia.config.conftest import ctx as ctx
from ..maia.config.conftest import home as home
from ..maia.config.conftest import work as work
from ..maia.config.test_admission import add_project
from ..maia.config.test_relocate import _confirm, _git, _preview


async def test_a_retried_relocation_replays_after_the_root_changed(
    ctx: ServiceContext, work: Path
) -> None:
    """Relocated to a checkout of main; the checkout moves to another branch, then the
    folder is removed: the same confirm answers duplicate with the first receipt each time.
    The same commandId with another root is still refused."""
    project_id = await add_project(ctx, work / "old")
    os.mkdir(work / "new", 0o700)
    _git(work / "new")
    preview = await _preview(ctx, project_id, work / "new")
    done = await _confirm(ctx, preview, work / "new", "move")
    _git(work / "new", "other")
    again = await _confirm(ctx, preview, work / "new", "move")
    assert (done["delivery"], again["delivery"]) == ("new", "duplicate")
    assert again["receiptId"] == done["receiptId"]
    shutil.rmtree(work / "new")
    gone = await _confirm(ctx, preview, work / "new", "move")
    assert (gone["delivery"], gone["receiptId"]) == ("duplicate", done["receiptId"])
    os.mkdir(work / "elsewhere", 0o700)
    with pytest.raises(MaiaError) as caught:
        await _confirm(ctx, preview, work / "elsewhere", "move")
    assert caught.value.code in ("preview_mismatch", "idempotency_conflict")
