"""`python -m maia.node start|status|stop` as real processes: detach, status, stop, signals."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import psutil

from maia.core import read_discovery
from maia.node import NodeHome

TIMEOUT_S = 60


def _node(home: Path, *args: str, umask: int = -1) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "maia.node", *args, "--home", str(home)],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        umask=umask,
        check=False,
    )


def _gone(pid: int) -> bool:
    try:
        return bool(psutil.Process(pid).status() == psutil.STATUS_ZOMBIE)
    except psutil.NoSuchProcess:
        return True


def test_detach_status_stop_leaves_nothing_behind(tmp_path: Path) -> None:
    """start --detach returns once ready; status --json answers; stop ends the process."""
    home = NodeHome(tmp_path / "home")
    started = _node(home.root, "start", "--detach", umask=0)
    assert started.returncode == 0, started.stderr
    record = read_discovery(home.discovery_path)
    assert record is not None
    assert record.is_live()
    assert record.url in started.stdout
    try:
        for path in (home.discovery_path, home.token_path):
            assert path.stat().st_mode & 0o777 == 0o600, path
        assert home.root.stat().st_mode & 0o777 == 0o700

        status = _node(home.root, "status", "--json")
        assert status.returncode == 0, status.stderr
        result = json.loads(status.stdout)
        assert result["nodeId"] == record.node_id
        assert result["storage"]["integrity"] == "ok"

        human = _node(home.root, "status")
        assert human.returncode == 0, human.stderr
        assert record.node_id in human.stdout
        assert "storage   ok" in human.stdout

        second = _node(home.root, "start")
        assert second.returncode == 1
        assert f"pid {record.pid}" in second.stderr
        assert record.url in second.stderr
    finally:
        stopped = _node(home.root, "stop")
    assert stopped.returncode == 0, stopped.stderr
    assert _gone(record.pid)
    assert not home.discovery_path.exists()
    assert not home.token_path.exists()
    after = _node(home.root, "status", "--json")
    assert after.returncode == 1
    assert json.loads(after.stdout)["error"]["code"] == "unavailable"


def test_foreground_node_stops_on_sigint_and_sigterm(tmp_path: Path) -> None:
    """A foreground Node stops gracefully and exits 0 on SIGINT and on SIGTERM."""
    home = NodeHome(tmp_path / "home")
    for signum in (signal.SIGINT, signal.SIGTERM):
        process = subprocess.Popen(
            [sys.executable, "-m", "maia.node", "start", "--home", str(home.root)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            assert process.stdout is not None
            line = process.stdout.readline()
            assert "listening on ws://127.0.0.1:" in line
            process.send_signal(signum)
            out, err = process.communicate(timeout=TIMEOUT_S)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait(timeout=TIMEOUT_S)
        assert process.returncode == 0, err
        assert "Maia Node stopped" in out
        assert not home.discovery_path.exists()


def test_stop_without_a_node_is_a_no_op(tmp_path: Path) -> None:
    """stop on a home with no Node says so and exits 0."""
    stopped = _node(tmp_path / "home", "stop")
    assert stopped.returncode == 0
    assert "no Maia Node is running" in stopped.stdout


def test_unusable_storage_exits_non_zero_with_a_message(tmp_path: Path) -> None:
    """A Node whose database cannot be opened exits 1 and says which file."""
    home = NodeHome(tmp_path / "home")
    home.ensure()
    home.database_path.write_bytes(b"this is not an SQLite database, whatever it says" * 40)
    failed = _node(home.root, "start")
    assert failed.returncode == 1
    assert "cannot open storage at" in failed.stderr
    assert str(home.database_path) in failed.stderr
    assert "Traceback" not in failed.stderr
    assert os.listdir(home.root).count("node.json") == 0


_STUCK_NODE = """
import os, signal, sys
from pathlib import Path
import trio
import maia.node._tree as tree
from maia.node import NodeConfig, NodeHome, run_node

original = tree._api_child

async def stuck(services, state, ctx, *, task_status):
    try:
        await original(services, state, ctx, task_status=task_status)
    finally:
        with trio.CancelScope(shield=True):
            await trio.sleep(3600)  # a part that ignores being stopped

tree._api_child = stuck
config = NodeConfig(NodeHome(Path(sys.argv[1])))
ready = lambda running: os.kill(os.getpid(), signal.SIGTERM)
trio.run(lambda: run_node(config, on_ready=ready, stop_bound_s=0.5))
"""


def test_a_stop_that_hangs_is_cut_short(tmp_path: Path) -> None:
    """A Node whose part ignores the stop exits 70 once the stop bound has passed."""
    done = subprocess.run(
        [sys.executable, "-c", _STUCK_NODE, str(tmp_path / "home")],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )
    assert done.returncode == 70, done.stderr
    assert "did not stop within" in done.stderr
