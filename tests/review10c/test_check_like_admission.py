"""`maia config check` checks what admission would: through a home that is a symlink (which
docs/configuration.md allows, "a home may be a link to another disk") it read the inventory
without resolving the link and refused the home as a symbolic link, so every check of such
a home failed and no Project file of its inventory was checked; and a Project cost limit in
another currency than the user file's passed check although admission refuses it."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from tests.maia.cli._node import Cli

PROJECT = {"schemaVersion": "maia.project-config.v1", "projectKey": "app"}


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    path.write_text(text)
    os.chmod(path, 0o600)


def _home_with_a_project(tmp_path: Path, user: Any, project: Any) -> tuple[Path, Path]:
    home, root = tmp_path / "home", tmp_path / "work" / "app"
    _write(home / "config.jsonc", json.dumps(user))
    _write(root / ".maia" / "config.jsonc", json.dumps(project))
    inventory = [{"projectId": "project_" + "a" * 32, "projectKey": "app",
                  "rootPath": str(root), "workspaceKind": "directory"}]  # fmt: skip
    _write(home / "projects.jsonc", json.dumps(inventory))
    return home, root


def test_a_symlinked_home_is_checked_through_its_link(tmp_path: Path) -> None:
    """MAIA_HOME a symlink to the home: exit 0, the inventory's Project file checked too."""
    home, root = _home_with_a_project(tmp_path, {}, PROJECT)
    link = tmp_path / "link"
    link.symlink_to(home)
    result = Cli(link, tmp_path)("config", "check", "--json")
    assert result.returncode == 0, result.stdout
    report = json.loads(result.stdout)
    assert report["problems"] == []
    assert str(root / ".maia" / "config.jsonc") in report["checked"]


def test_a_cost_limit_in_another_currency_is_a_problem(tmp_path: Path) -> None:
    """User limits in USD, the Project's daily cost limit in EUR: the problem admission
    gives, at limits.currency."""
    user = {"swarm": {"capacity": {"maxDailyCostMicros": 10**6, "currency": "USD"}}}
    project = {**PROJECT, "limits": {"maxDailyCostMicros": 10**5, "currency": "EUR"}}
    home, root = _home_with_a_project(tmp_path, user, project)
    result = Cli(home, tmp_path)("config", "check", "--json")
    assert result.returncode == 2, result.stdout
    (problem,) = json.loads(result.stdout)["problems"]
    assert (problem["source"], problem["path"]) == (str(root / ".maia" / "config.jsonc"),
                                                    "limits.currency")  # fmt: skip
