"""Files in the home: planted symlinks are refused, never followed; every file is 0600,
created so and tightened at start."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import trio

from maia.node import NodeConfig, NodeHome, NodeStartError, serve_node

TIMEOUT_S = 60


def _mode(path: Path) -> int:
    return path.stat().st_mode & 0o777


def _victim(tmp_path: Path) -> Path:
    victim = tmp_path / "victim.txt"
    victim.write_text("the user's own file\n")
    os.chmod(victim, 0o644)
    return victim


@pytest.mark.parametrize("name", ["node.lock", "node.log", "maia.db", "node.json"])
async def test_a_planted_symlink_stops_the_start_untouched(tmp_path: Path, name: str) -> None:
    """A symlink in the home's place of a file: the start fails naming it, the target is
    neither truncated, chmodded nor appended to."""
    home = NodeHome(tmp_path / "home")
    home.root.mkdir(mode=0o700)
    victim = _victim(tmp_path)
    (home.root / name).symlink_to(victim)
    with trio.fail_after(60), pytest.raises(NodeStartError, match=rf"{name} is a symbolic link"):
        await serve_node(NodeConfig(home))
    assert victim.read_text() == "the user's own file\n"
    assert _mode(victim) == 0o644


def test_detached_start_does_not_follow_a_planted_log_symlink(tmp_path: Path) -> None:
    """`node start --detach` with node.log a symlink: exit 1 naming it, the target intact."""
    home = NodeHome(tmp_path / "home")
    home.root.mkdir(mode=0o700)
    victim = _victim(tmp_path)
    home.log_path.symlink_to(victim)
    started = subprocess.run(
        [sys.executable, "-m", "maia.node", "start", "--detach", "--home", str(home.root)],
        capture_output=True, text=True, timeout=TIMEOUT_S, check=False,
    )  # fmt: skip
    if started.returncode == 0:  # the bug: a Node started through the symlink; stop it
        subprocess.run([sys.executable, "-m", "maia.node", "stop", "--home", str(home.root)],
                       capture_output=True, timeout=TIMEOUT_S, check=False)  # fmt: skip
    assert started.returncode == 1
    assert "node.log is a symbolic link" in started.stderr
    assert victim.read_text() == "the user's own file\n"


async def test_a_fifo_in_place_of_the_lock_is_refused(tmp_path: Path) -> None:
    """A non-regular file (a FIFO) where node.lock goes: refused, and the open never blocks."""
    home = NodeHome(tmp_path / "home")
    home.root.mkdir(mode=0o700)
    os.mkfifo(home.lock_path)
    with trio.fail_after(30), pytest.raises(NodeStartError, match=r"node\.lock is not a regular"):
        await serve_node(NodeConfig(home))


WIDE = ("maia.db", "maia.db-wal", "maia.db-shm", "config.jsonc", "console_history", "node.log")


async def test_existing_wide_files_are_tightened_at_start(
    nursery: trio.Nursery, tmp_path: Path
) -> None:
    """maia.db, -wal, -shm, config.jsonc, console_history and node.log left 0644 are 0600
    once the Node has started."""
    home = NodeHome(tmp_path / "home")
    home.root.mkdir(mode=0o700)
    for name in WIDE:
        path = home.root / name
        path.write_bytes(b"" if name.startswith("maia.db") else b"{}\n")
        os.chmod(path, 0o644)
    await nursery.start(serve_node, NodeConfig(home))
    for name in WIDE:
        path = home.root / name
        if path.exists():  # SQLite may remove an empty -wal/-shm left behind
            assert _mode(path) == 0o600, name


async def test_a_new_database_and_its_wal_are_0600_under_umask_022(
    nursery: trio.Nursery, tmp_path: Path
) -> None:
    """On a fresh home under umask 022, maia.db, maia.db-wal and maia.db-shm are 0600."""
    home = NodeHome(tmp_path / "home")
    previous = os.umask(0o022)
    try:
        await nursery.start(serve_node, NodeConfig(home))
    finally:
        os.umask(previous)
    for name in ("maia.db", "maia.db-wal", "maia.db-shm"):
        assert _mode(home.root / name) == 0o600, name


def test_the_console_creates_owner_only_files(tmp_path: Path) -> None:
    """The console sets umask 077 before it opens console_history (every prompt typed)."""
    code = (
        "import os, sys\nfrom maia.console import run_console\n"
        "run_console(home=sys.argv[1])\n"
        "open(os.path.join(sys.argv[1], 'probe'), 'w').close()\nprint(oct(os.umask(0)))\n"
    )
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    done = subprocess.run(
        [sys.executable, "-c", code, str(home)],
        capture_output=True, text=True, timeout=TIMEOUT_S, check=False, umask=0o022,
    )  # fmt: skip
    assert done.stdout.strip().splitlines()[-1] == "0o77", done.stderr
    assert _mode(home / "probe") == 0o600
