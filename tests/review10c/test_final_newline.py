"""A name or key followed by a newline (`"app\\n"`) is refused: the patterns end in `$`,
which Python's `re.match` lets match before a final newline, so an executor name, an
environment variable name, a modelRef and a projectKey each passed with one."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from maia.config import check_project_config, check_user_config
from tests.maia.cli._node import Cli

USER_DOCUMENTS: list[tuple[dict[str, Any], str]] = [
    ({"executors": {"tool\n": {"kind": "echo"}}}, "executors.tool\n"),
    ({"executors": {"tool": {"kind": "echo", "env": ["PATH\n"]}}}, "executors.tool.env[0]"),
    ({"defaults": {"modelRef": "gpt-5\n"}}, "defaults.modelRef"),
]


@pytest.mark.parametrize(("document", "path"), USER_DOCUMENTS)
def test_user_file(document: dict[str, Any], path: str) -> None:
    """The user checker names the key whose value ends in a newline."""
    _, problems = check_user_config(document)
    assert [p.path for p in problems] == [path]


def test_project_key() -> None:
    """`projectKey: "app\\n"` does not match ^[a-z][a-z0-9-]{1,63}$."""
    document = {"schemaVersion": "maia.project-config.v1", "projectKey": "app\n"}
    config, problems = check_project_config(document)
    assert config is None
    assert [p.path for p in problems] == ["projectKey"]


def test_config_check_reports_it(tmp_path: Path) -> None:
    """`maia config check` lists the problem with its line and column, exit 2."""
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    path = home / "config.jsonc"
    path.write_text('{\n  "defaults": {"modelRef": "gpt-5\\n"}\n}\n')
    os.chmod(path, 0o600)
    result = Cli(home, tmp_path)("config", "check", "--json")
    assert result.returncode == 2, result.stderr
    (problem,) = json.loads(result.stdout)["problems"]
    assert (problem["path"], problem["line"]) == ("defaults.modelRef", 2)
