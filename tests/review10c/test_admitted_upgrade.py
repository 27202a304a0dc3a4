"""A home whose admitted user configuration this Maia refuses (admitted by an earlier, laxer
build: an echo executor with `model`) must still start: admitting a fix needs a running Node.
The Node runs on config.jsonc, says so in its log, and the executor works. Real Node
processes, the real CLI, the snapshot edited in SQLite as the earlier build would have left
it."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

MAIA = [sys.executable, "-m", "maia"]
TIMEOUT_S = 90


def _maia(home: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "MAIA_HOME": str(home)}
    return subprocess.run([*MAIA, *args], cwd=cwd, env=env, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=TIMEOUT_S, check=False)  # fmt: skip


def test_a_snapshot_this_build_refuses_leaves_the_node_startable(tmp_path: Path) -> None:
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir(mode=0o700)
    work.mkdir()
    (home / "config.jsonc").write_text(json.dumps({"executors": {"e": {"kind": "echo"}}}))
    assert _maia(home, work, "node", "start", "--detach").returncode == 0
    try:
        admitted = _maia(home, work, "config", "admit", "--yes")
        assert admitted.returncode == 0, admitted.stderr
    finally:
        assert _maia(home, work, "node", "stop").returncode == 0
    with sqlite3.connect(home / "maia.db") as conn:  # what a laxer build admitted
        conn.execute("UPDATE config_snapshots SET manifest ="
                     " json_set(manifest, '$.document.executors.e.model', 'm')")  # fmt: skip
    started = _maia(home, work, "node", "start", "--detach")
    try:
        assert started.returncode == 0, started.stdout + started.stderr
        created = _maia(home, work, "session", "create", "--title", "t", "--executor", "user:e")
        assert created.returncode == 0, created.stderr
        sent = _maia(home, work, "turn", "send", "t", "hello", "--wait")
        assert (sent.returncode, sent.stdout.strip()) == (0, "hello"), sent.stderr
    finally:
        _maia(home, work, "node", "stop")
    log = (home / "node.log").read_text()
    assert "does not pass this Maia's checks" in log
    assert "executors.e.model" in log
