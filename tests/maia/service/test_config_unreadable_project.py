"""A Project whose admitted configuration snapshot this build refuses (written by another
version, or corrupted in its SQLite row) keeps working: its Sessions run on what can be
read (its file), `config show` and `node status` report the unreadable snapshot, and an
admission mends it. Real Node processes, the real CLI, the row edited in the real file."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

MAIA = [sys.executable, "-m", "maia"]
TIMEOUT_S = 90
PROJECT_FILE = {
    "schemaVersion": "maia.project-config.v1",
    "projectKey": "app",
    "defaults": {"executorRef": "user:e"},
}
CORRUPTIONS = {
    # what another (laxer, or newer) build admitted: a key this one does not know
    "refused": "json_set(manifest, '$.document.futureKey', 1)",
    "not-json": "'{not json'",
}


def _maia(home: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "MAIA_HOME": str(home)}
    return subprocess.run([*MAIA, *args], cwd=cwd, env=env, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=TIMEOUT_S, check=False)  # fmt: skip


def _json(home: Path, cwd: Path, *args: str) -> dict[str, Any]:
    done = _maia(home, cwd, *args, "--json")
    assert done.returncode == 0, (args, done.stdout, done.stderr)
    result: dict[str, Any] = json.loads(done.stdout)["result"]
    return result


@pytest.fixture(params=sorted(CORRUPTIONS))
def broken(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Path, Path, str]]:
    """A running Node whose Project `app` has its admitted snapshot row corrupted."""
    home, root = tmp_path / "home", tmp_path / "work" / "app"
    home.mkdir(mode=0o700)
    (root / ".maia").mkdir(parents=True)
    (home / "config.jsonc").write_text(json.dumps({"executors": {"e": {"kind": "echo"}}}))
    (root / ".maia" / "config.jsonc").write_text(json.dumps(PROJECT_FILE))
    assert _maia(home, root, "node", "start", "--detach").returncode == 0
    try:
        assert _maia(home, root, "config", "admit", "--yes").returncode == 0
        project = _json(home, root, "project", "add", str(root), "--project-key", "app")
        project_id = project["project"]["projectId"]
        admitted = _maia(home, root, "config", "admit", "--project-id", "app", "--yes")
        assert admitted.returncode == 0, admitted.stderr
    finally:
        assert _maia(home, root, "node", "stop").returncode == 0
    with sqlite3.connect(home / "maia.db") as conn:
        changed = conn.execute(
            f"UPDATE config_snapshots SET manifest = {CORRUPTIONS[request.param]} WHERE scope = ?",
            (project_id,),
        ).rowcount
        assert changed == 1
    assert _maia(home, root, "node", "start", "--detach").returncode == 0
    try:
        yield home, root, project_id
    finally:
        _maia(home, root, "node", "stop")


def test_the_project_works_reports_the_snapshot_and_an_admission_mends_it(
    broken: tuple[Path, Path, str],
) -> None:
    """Sessions run (on the file's default executor); config show and node status say the
    snapshot is unreadable; `config admit` admits the file again and the report clears."""
    home, root, project_id = broken
    created = _json(home, root, "session", "create", "--title", "t", "--project-id", "app")
    assert created["session"]["executor"] == "user:e"  # the file's defaults.executorRef
    sent = _maia(home, root, "turn", "send", "t", "hello", "--wait")
    assert (sent.returncode, sent.stdout.strip()) == (0, "hello"), sent.stderr

    shown = _json(home, root, "config", "show", "--project-id", "app")
    status = shown["project"]
    assert status["file"] == "differs", status
    (problem,) = status["problems"]
    assert "admitted snapshot" in problem["detail"], problem
    assert "maia config admit --project-id" in problem["detail"], problem
    files = _json(home, root, "node", "status")["configFiles"]
    assert [f.get("projectId") for f in files] == [project_id], files

    mended = _maia(home, root, "config", "admit", "--project-id", "app", "--yes")
    assert mended.returncode == 0, mended.stdout + mended.stderr
    again = _json(home, root, "config", "show", "--project-id", "app")["project"]
    assert (again["file"], again["problems"]) == ("admitted", []), again
    assert _json(home, root, "node", "status")["configFiles"] == []
    log = (home / "node.log").read_text()
    assert f"admitted configuration of Project {project_id}" in log


def test_a_user_snapshot_that_is_not_json_is_reported_and_mended(tmp_path: Path) -> None:
    """The user scope's snapshot row holding no JSON: the Node starts on config.jsonc,
    config show reports it (differs, a maia.db problem), an admission mends it."""
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir(mode=0o700)
    work.mkdir()
    (home / "config.jsonc").write_text(json.dumps({"executors": {"e": {"kind": "echo"}}}))
    assert _maia(home, work, "node", "start", "--detach").returncode == 0
    try:
        assert _maia(home, work, "config", "admit", "--yes").returncode == 0
    finally:
        assert _maia(home, work, "node", "stop").returncode == 0
    with sqlite3.connect(home / "maia.db") as conn:
        conn.execute("UPDATE config_snapshots SET manifest = '{not json'")
    started = _maia(home, work, "node", "start", "--detach")
    try:
        assert started.returncode == 0, started.stdout + started.stderr
        user = _json(home, work, "config", "show")["user"]
        assert user["file"] == "differs", user
        (problem,) = user["problems"]
        assert problem["source"] == str(home / "maia.db"), problem
        assert "stored manifest is not JSON" in problem["detail"], problem
        # The human form says what is wrong: not an edit, an admitted snapshot it cannot read.
        text = _maia(home, work, "config", "show").stdout
        (header,) = [line for line in text.splitlines() if line.startswith("user file")]
        assert "edited since admitted" not in header, header
        assert "admitted snapshot cannot be read" in header, header
        assert "maia config admit" in header, header
        created = _maia(home, work, "session", "create", "--title", "t", "--executor", "user:e")
        assert created.returncode == 0, created.stderr
        assert _maia(home, work, "config", "admit", "--yes").returncode == 0
        assert _json(home, work, "config", "show")["user"]["file"] == "admitted"
    finally:
        _maia(home, work, "node", "stop")
