"""`maia routine create` without --project-id takes the Project whose root is the current
folder, as `session create` does, but never adds one (a real Node)."""

from __future__ import annotations

import json
from pathlib import Path

from ._node import Cli, running_node

ROUTINE = ["routine", "create", "--name", "nightly", "--cron", "0 9 * * *", "--timezone", "UTC",
           "--prompt", "hi"]  # fmt: skip


def test_routine_create_takes_the_current_folders_project(tmp_path: Path) -> None:
    with running_node(tmp_path) as cli:
        added = cli("project", "add", ".", "--json")
        assert added.returncode == 0, added.stderr
        project_id = json.loads(added.stdout)["result"]["project"]["projectId"]
        created = cli(*ROUTINE, "--yes", "--json")
        assert created.returncode == 0, created.stderr
        routine = json.loads(created.stdout)["result"]["routine"]
        assert routine["template"]["projectId"] == project_id
        elsewhere = tmp_path / "elsewhere"
        elsewhere.mkdir()
        outside = Cli(cli.home, elsewhere)
        refused = outside(*ROUTINE, "--dry-run", "--json")
        listed = outside("project", "list", "--json")
    assert refused.returncode == 2, refused.stderr
    error = json.loads(refused.stdout)["error"]
    assert (error["code"], error["details"]["path"]) == ("validation_failed", "template.projectId")
    projects = json.loads(listed.stdout)["result"]["projects"]
    assert [p["projectId"] for p in projects] == [project_id]  # the preview added none
