"""`maia node start --detach` / `maia node stop` of a real Node with a worker that ignores
SIGTERM mid-turn and a worker's `setsid` grandchild (docs/node.md "Starting and stopping",
docs/workers.md "Timings and supervision"): a second start is refused naming the holder, the
stop exits 0 within its bound, leaves no process of the home behind (read from /proc), and
the next start ends the turn the stop cut short and runs a new one."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from maia.core import read_discovery

from ._db import alive, processes_with, query, wait_gone, wait_rows

CONFIG = '{"executors": {"echo": {"kind": "echo"}}}\n'
MAIA = [sys.executable, "-c", "import sys; from maia.cli import main; sys.exit(main())"]
ENDED = ("completed", "failed", "interrupted")
TURN = "SELECT state, failure_reason FROM turns WHERE turn_id = ?"


def _maia(home: Path, *args: str, timeout_s: float = 120) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "MAIA_HOME": str(home), "NO_COLOR": "1"}
    env.pop("MAIA_NODE", None)
    return subprocess.run([*MAIA, *args], capture_output=True, text=True, env=env,
                          cwd=home.parent, timeout=timeout_s, check=False,
                          stdin=subprocess.DEVNULL)  # fmt: skip


def _json(done: subprocess.CompletedProcess[str]) -> Any:
    assert done.returncode == 0, (done.stdout, done.stderr)
    return json.loads(done.stdout)["result"]


def _send(home: Path, session: str, text: str, key: str) -> str:
    sent = _json(_maia(home, "turn", "send", session, text, "--command-id", key, "--json"))
    return str(sent["turn"]["turnId"])


def test_stop_with_a_stubborn_worker_and_a_grandchild_leaves_nothing(tmp_path: Path) -> None:
    """Lock refusal, then a stop that reaches every process of the home, then recovery."""
    home, project = tmp_path / "home", tmp_path / "project"
    home.mkdir(mode=0o700)
    project.mkdir()
    (home / "config.jsonc").write_text(CONFIG)
    marker = os.path.realpath(home / "maia.db")  # every worker's MAIA_WORKER_SCOPE
    node_pid = 0
    try:
        started = _maia(home, "node", "start", "--detach")
        assert started.returncode == 0, started.stderr
        record = read_discovery(home / "node.json")
        assert record is not None
        node_pid = record.pid
        second = _maia(home, "node", "start", "--detach")
        assert second.returncode == 1
        assert f"pid {node_pid}" in second.stderr + second.stdout
        _json(_maia(home, "project", "add", str(project), "--json"))
        for title in ("kid", "stubborn"):
            made = _maia(home, "session", "create", "--title", title, "--executor",
                         "user:echo", "--project-id", "project", "--json")  # fmt: skip
            _json(made)
        kid_turn = _send(home, "kid", "/grandchild", "g")
        _json(_maia(home, "turn", "wait", kid_turn, "--json"))
        rows = wait_rows(home, "SELECT text FROM turn_items WHERE turn_id = ?", (kid_turn,),
                         lambda r: any("grandchild" in (t or "") for (t,) in r))  # fmt: skip
        grandchild = int(next(t for (t,) in rows if "grandchild" in (t or "")).split()[-1])
        assert alive(grandchild)
        ignore = _send(home, "stubborn", "/ignore-term ok", "i")
        _json(_maia(home, "turn", "wait", ignore, "--json"))
        cut = _send(home, "stubborn", "/sleep 600000 never", "c")
        wait_rows(home, TURN, (cut,), lambda r: r and r[0][0] == "running")
        assert len(processes_with(marker)) >= 3  # two workers and the grandchild
        stopped = _maia(home, "node", "stop")
        assert stopped.returncode == 0, stopped.stderr
        assert wait_gone(node_pid, 5)
        assert processes_with(marker) == [], "processes of the home outlived node stop"
        assert not (home / "node.json").exists()
        assert _maia(home, "node", "start", "--detach").returncode == 0
        record = read_discovery(home / "node.json")
        assert record is not None
        node_pid = record.pid
        ((state, _reason),) = wait_rows(home, TURN, (cut,), lambda r: r and r[0][0] in ENDED)
        after = _send(home, "stubborn", "after", "a")
        done = _json(_maia(home, "turn", "wait", after, "--json"))["turn"]
        assert done["state"] == "completed", done
        assert query(home, TURN, (cut,))[0][0] == state  # ended once, never re-run
        assert _maia(home, "node", "stop").returncode == 0
    finally:
        if node_pid and alive(node_pid):
            os.kill(node_pid, signal.SIGKILL)
        for pid in processes_with(marker):
            os.kill(pid, signal.SIGKILL)
