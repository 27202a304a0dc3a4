"""The database after a clean stop, and `maia node backup`, against a real Node process."""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

from maia.node import NodeHome

TIMEOUT_S = 60
MAIA = str(Path(sys.executable).parent / "maia")


def _maia(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [MAIA, *args], capture_output=True, text=True, timeout=TIMEOUT_S, check=False
    )


def _tables(path: Path) -> set[str]:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
    finally:
        conn.close()


def test_clean_stop_and_backup(tmp_path: Path) -> None:
    """A backup taken while the Node runs is one complete file (0600, never over another
    file); after `node stop` the WAL is empty and maia.db alone holds every table."""
    home = NodeHome(tmp_path / "home")
    started = _maia("node", "start", "--detach", "--home", str(home.root))
    assert started.returncode == 0, started.stderr
    try:
        copy = tmp_path / "backup.db"
        backed = _maia("node", "backup", str(copy), "--home", str(home.root))
        assert backed.returncode == 0, backed.stderr
        assert {"sessions", "events", "node"} <= _tables(copy)
        assert copy.stat().st_mode & 0o777 == 0o600
        assert not (tmp_path / "backup.db-wal").exists()
        again = _maia("node", "backup", str(copy), "--home", str(home.root))
        assert again.returncode == 2
        assert "exists" in again.stderr
    finally:
        stopped = _maia("node", "stop", "--home", str(home.root))
        assert stopped.returncode == 0, stopped.stderr
    wal = home.root / "maia.db-wal"
    assert not wal.exists() or wal.stat().st_size == 0
    alone = tmp_path / "alone"
    alone.mkdir()
    shutil.copy(home.database_path, alone / "maia.db")  # the file alone, no -wal beside it
    assert {"sessions", "events", "node"} <= _tables(alone / "maia.db")
