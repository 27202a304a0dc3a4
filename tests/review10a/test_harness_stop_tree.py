"""A harness stop ends the commands that left its process group: a harness (a shell) that
starts `sleep` in a session of its own (setsid, as Codex's sandbox does) leaves no sleep
behind once `HarnessProcess.stop` returns (killing the group alone left it running)."""

from __future__ import annotations

import os
import shutil
import time
import uuid
from pathlib import Path

import pytest

from worker_bridge.workers._descendants import descendants
from worker_bridge.workers._harness import HarnessProcess


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def test_a_stop_kills_a_descendant_in_a_session_of_its_own(tmp_path: Path) -> None:
    """The setsid'd sleep is gone after stop; the harness's own group is gone too."""
    if shutil.which("setsid") is None:
        pytest.skip("no setsid")
    marker = tmp_path / f"ready-{uuid.uuid4().hex}"
    script = f"setsid sleep 319 & touch {marker}; while true; do sleep 1; done"
    harness = HarnessProcess(["/bin/sh", "-c", script], env=dict(os.environ))
    deadline = time.monotonic() + 30
    escaped: list[int] = []
    while not escaped:
        assert time.monotonic() < deadline, "the sleep never started"
        if marker.exists():
            escaped = [pid for pid, _ in descendants(harness.pid)
                       if os.getpgid(pid) != harness.pid]  # fmt: skip
        time.sleep(0.05)
    harness.stop()
    assert [pid for pid in escaped if _alive(pid)] == []
