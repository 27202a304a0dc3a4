"""A Project file naming a builtin: or user: executor nothing defines is refused at
admission, naming the key and the known executors: before, `defaults.executorRef:
"builtin:ehco"` (or a `user:` executor the admitted user configuration lacks) was admitted,
and every `session.create` of the Project without an executor was then refused. Checked
against the admitted user configuration (and by `maia config check` against the user file).
Real storage, a real root and file, the handlers; the CLI for check."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
import trio

from maia.config import UserConfig
from maia.protocol import MaiaError, SystemClock
from maia.service import open_services
from storage import open_storage
from tests.maia.cli._node import Cli

from .test_admission_property import _call

KEYS = ("previewId", "proof", "inputDigest", "manifestDigest", "expectedRevision")


def _write(path: Path, document: dict[str, Any]) -> None:
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    path.write_text(json.dumps(document))
    os.chmod(path, 0o600)


def _project(**keys: Any) -> dict[str, Any]:
    return {"schemaVersion": "maia.project-config.v1", "projectKey": "app", **keys}


async def _admit_user_then_preview(home: Path, root: Path) -> MaiaError | None:
    async with (
        open_storage(home / "maia.db", clock=SystemClock(), synchronous="NORMAL") as store,
        open_services(store, clock=SystemClock(), home=home, config=UserConfig()) as ctx,
    ):
        preview = await _call(ctx, "config.admit.preview", {})
        await _call(ctx, "config.admit.confirm", {k: preview[k] for k in KEYS} | {"commandId": "u"})
        body = {"commandId": "add", "rootPath": str(root), "projectKey": "app"}
        project_id = (await _call(ctx, "project.add", body))["project"]["projectId"]
        try:
            await _call(ctx, "config.admit.preview", {"projectId": project_id})
        except MaiaError as error:
            return error
        return None


REFUSED = [
    (_project(defaults={"executorRef": "builtin:ehco"}), "defaults.executorRef"),
    (_project(allowedExecutors=["builtin:echo", "user:nope"]), "allowedExecutors[1]"),
]


@pytest.mark.parametrize(("project", "path"), REFUSED)
def test_an_unknown_executor_is_refused(tmp_path: Path, project: dict[str, Any], path: str) -> None:
    """configuration_invalid at the key, naming the executors the user configuration has."""
    home, root = tmp_path / "home", tmp_path / "work" / "app"
    _write(home / "config.jsonc", {"executors": {"cat": {"kind": "exec", "argv": ["cat"]}}})
    _write(root / ".maia" / "config.jsonc", project)
    refusal = trio.run(_admit_user_then_preview, home, root)
    assert refusal is not None
    assert refusal.code == "configuration_invalid"
    assert refusal.details["path"] == path
    assert "builtin:echo, user:cat" in refusal.details["detail"]


def test_known_executors_are_admitted(tmp_path: Path) -> None:
    """builtin:echo and the admitted user:cat: the preview answers."""
    home, root = tmp_path / "home", tmp_path / "work" / "app"
    _write(home / "config.jsonc", {"executors": {"cat": {"kind": "exec", "argv": ["cat"]}}})
    project = _project(defaults={"executorRef": "user:cat"},
                       allowedExecutors=["builtin:echo", "user:cat"])  # fmt: skip
    _write(root / ".maia" / "config.jsonc", project)
    assert trio.run(_admit_user_then_preview, home, root) is None


def test_config_check_names_it(tmp_path: Path) -> None:
    """`maia config check --root`: the same problem, against the user file."""
    home, root = tmp_path / "home", tmp_path / "work" / "app"
    _write(home / "config.jsonc", {})
    _write(root / ".maia" / "config.jsonc", _project(defaults={"executorRef": "user:cat"}))
    result = Cli(home, tmp_path)("config", "check", "--root", str(root), "--json")
    assert result.returncode == 2, result.stdout
    (problem,) = json.loads(result.stdout)["problems"]
    assert problem["path"] == "defaults.executorRef"
