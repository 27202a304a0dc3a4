"""A Project file whose `projectKey` (or `schemaVersion`) is `null` is refused naming the
key: before, `null` passed for "given", so `{"schemaVersion": null, "projectKey": null}`
had no problem and no configuration, `parse_project_config` failed an assert, and
config.admit.preview of such a file failed an assert in the handler (an internal error,
not `configuration_invalid`). Real storage, a real Project root and file, the handlers."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import trio

from maia.config import UserConfig, check_project_config, parse_project_config
from maia.protocol import MaiaError, SystemClock
from maia.service import open_services
from storage import open_storage

from .test_admission_property import _call

DOCUMENTS: list[tuple[dict[str, Any], list[str]]] = [
    ({"schemaVersion": None, "projectKey": None}, ["schemaVersion", "projectKey"]),
    ({"schemaVersion": "maia.project-config.v1", "projectKey": None}, ["projectKey"]),
    ({"schemaVersion": None, "projectKey": "app"}, ["schemaVersion"]),
]


@pytest.mark.parametrize(("document", "paths"), DOCUMENTS)
def test_null_is_not_given(document: dict[str, Any], paths: list[str]) -> None:
    """check names each null key; parse raises configuration_invalid."""
    config, problems = check_project_config(document)
    assert config is None
    assert [p.path for p in problems] == paths
    with pytest.raises(MaiaError) as caught:
        parse_project_config(document)
    assert caught.value.code == "configuration_invalid"


async def _preview(home: Path, root: Path) -> MaiaError:
    async with (
        open_storage(home / "maia.db", clock=SystemClock(), synchronous="NORMAL") as store,
        open_services(store, clock=SystemClock(), home=home, config=UserConfig()) as ctx,
    ):
        body = {"commandId": "add", "rootPath": str(root), "projectKey": "app"}
        project_id = (await _call(ctx, "project.add", body))["project"]["projectId"]
        with pytest.raises(MaiaError) as caught:
            await _call(ctx, "config.admit.preview", {"projectId": project_id})
        return caught.value


def test_the_preview_refuses_it(tmp_path: Path) -> None:
    """config.admit.preview: configuration_invalid, details.path projectKey."""
    home, root = tmp_path / "home", tmp_path / "work" / "app"
    home.mkdir(mode=0o700)
    (root / ".maia").mkdir(mode=0o700, parents=True)
    path = root / ".maia" / "config.jsonc"
    path.write_text('{"schemaVersion": "maia.project-config.v1", "projectKey": null}')
    os.chmod(path, 0o600)
    refusal = trio.run(_preview, home, root)
    assert refusal.code == "configuration_invalid"
    assert refusal.details["path"] == "projectKey"
