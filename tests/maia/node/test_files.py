"""The home folder, credential files, the one-Node-per-home lock and stale discovery."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
import trio

from maia.core import Discovery, MaiaError, process_start_time, read_discovery
from maia.node import NodeConfig, NodeHome, NodeLock, NodeStartError, serve_node
from maia.node._home import write_private_file, write_token


@pytest.fixture
def umask_000() -> Iterator[None]:
    previous = os.umask(0)
    try:
        yield
    finally:
        os.umask(previous)


def _mode(path: Path) -> int:
    return path.stat().st_mode & 0o777


@pytest.mark.usefixtures("umask_000")
def test_home_and_private_files_are_owner_only_under_umask_000(tmp_path: Path) -> None:
    """Home 0700, token and any private file 0600, even with umask 000."""
    home = NodeHome(tmp_path / "a" / "home")
    home.ensure()
    assert _mode(home.root) == 0o700
    write_token(home)
    assert _mode(home.token_path) == 0o600
    write_private_file(home.discovery_path, b"{}")
    assert _mode(home.discovery_path) == 0o600
    assert _mode(home.database_path) == 0o600  # created before SQLite, which copies its mode
    assert sorted(p.name for p in home.root.iterdir()) == ["maia.db", "node.json", "node.token"]


def test_wide_existing_home_is_tightened(tmp_path: Path) -> None:
    """An existing home left 0755 is made 0700 at start."""
    root = tmp_path / "home"
    root.mkdir(mode=0o755)
    os.chmod(root, 0o755)
    NodeHome(root).ensure()
    assert _mode(root) == 0o700


def test_home_that_is_a_file_is_refused(tmp_path: Path) -> None:
    """A home path that is a file is a clear configuration error."""
    (tmp_path / "file").write_text("x")
    with pytest.raises(MaiaError) as caught:
        NodeHome(tmp_path / "file").ensure()
    assert caught.value.code == "configuration_invalid"


def test_home_resolution_follows_maia_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Explicit beats $MAIA_HOME beats ~/.maia."""
    monkeypatch.setenv("MAIA_HOME", str(tmp_path / "env"))
    assert NodeHome.resolve().root == tmp_path / "env"
    assert NodeHome.resolve(tmp_path / "x").root == tmp_path / "x"
    monkeypatch.delenv("MAIA_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    assert NodeHome.resolve().root == tmp_path / "user" / ".maia"


def test_second_lock_on_one_home_is_refused(tmp_path: Path) -> None:
    """The lock file admits one holder per home and names it to the next (another process)."""
    home = NodeHome(tmp_path / "home")
    home.ensure()
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLD_LOCK, str(home.root)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(MaiaError) as caught:
            NodeLock(home).acquire()
        assert caught.value.code == "unavailable"
        assert caught.value.details["pid"] == holder.pid
        assert f"pid {holder.pid}" in caught.value.message
    finally:
        holder.kill()
        holder.wait(timeout=10)
        if holder.stdout is not None:
            holder.stdout.close()
    with NodeLock(home):  # the kernel released the dead holder's lock
        pass


_HOLD_LOCK = """
import sys, time
from maia.node import NodeHome, NodeLock
lock = NodeLock(NodeHome(__import__("pathlib").Path(sys.argv[1])))
lock.acquire()
print("locked", flush=True)
time.sleep(60)
"""


def test_discovery_is_stale_for_a_dead_pid_or_another_start_time() -> None:
    """A record is live only for a running pid with the same process start time."""
    me = os.getpid()
    started = process_start_time(me)
    assert started is not None
    assert Discovery(me, started, "ws://x", "/t").is_live()
    assert not Discovery(me, started - 100, "ws://x", "/t").is_live()
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait(timeout=10)
    assert not Discovery(dead.pid, started, "ws://x", "/t").is_live()


def test_malformed_discovery_reads_as_absent(tmp_path: Path) -> None:
    """Garbage, a foreign format or wrong types in node.json read as no record at all."""
    path = tmp_path / "node.json"
    for content in [b"{", b"[]", b'{"format": "other"}', b'{"format": "maia.node-discovery/v1"}']:
        path.write_bytes(content)
        assert read_discovery(path) is None


async def test_stale_discovery_file_is_replaced(tmp_path: Path) -> None:
    """A discovery file left by a dead Node is replaced by the new Node's own."""
    home = NodeHome(tmp_path / "home")
    home.ensure()
    stale = Discovery(pid=2**22 + 7, start_time=1.0, url="ws://127.0.0.1:1/api/v1", token_path="/x")
    write_private_file(home.discovery_path, orjson.dumps(stale.to_json()))
    async with trio.open_nursery() as nursery:
        running = await nursery.start(serve_node, NodeConfig(home))
        record = read_discovery(home.discovery_path)
        assert record is not None
        assert record.is_live()
        assert record.pid == os.getpid()
        assert record.url == running.url
        assert record.token_path == str(home.token_path)
        nursery.cancel_scope.cancel()
    # A clean stop removes the discovery and token files.
    assert not home.discovery_path.exists()
    assert not home.token_path.exists()


async def test_node_that_cannot_open_storage_fails_clearly(tmp_path: Path) -> None:
    """Storage that cannot be opened stops the start with a message naming the database."""
    home = NodeHome(tmp_path / "home")
    home.ensure()
    home.database_path.unlink()
    home.database_path.mkdir()  # a folder where the database file should be
    with pytest.raises(NodeStartError, match=r"maia\.db is not a regular file"):
        await serve_node(NodeConfig(home))
    assert not home.discovery_path.exists()
