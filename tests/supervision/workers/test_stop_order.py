"""The bounded stop of a SIGSTOPped worker sends SIGTERM before SIGCONT, so the frozen
process dies of the pending TERM as it is continued and runs no more code: a worker the
Node gave up on (fenced) cannot read a prompt still in its pipe and start it."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import pytest
import trio

from supervision import _worker_stop
from supervision._process_group import signal_group
from supervision.workers import WorkerTimings

# Writes `resumed` from its SIGCONT handler: proof it ran again after being continued.
FROZEN = """
import signal, sys, time
def resumed(signum, frame):
    open(sys.argv[1], "w").write("resumed")
signal.signal(signal.SIGCONT, resumed)
print("ready", flush=True)
while True:
    time.sleep(0.01)
"""
TIMINGS = WorkerTimings(interrupt_ms=1000, terminate_ms=5000, kill_wait_ms=5000)


async def test_a_stopped_worker_dies_of_the_term_without_running_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After the CONT, the next signal is held back until the process wrote its marker (at
    most 1 s): with TERM first it never does, and it ends by SIGTERM, not SIGKILL."""
    marker = tmp_path / "resumed"

    def held_back(pgid: int, signum: int) -> bool:
        sent = signal_group(pgid, signum)
        deadline = time.monotonic() + 1.0
        while signum == signal.SIGCONT and not marker.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        return sent

    monkeypatch.setattr(_worker_stop, "signal_group", held_back)
    process = await trio.lowlevel.open_process(
        [sys.executable, "-c", FROZEN, str(marker)],
        stdout=-1,  # subprocess.PIPE
        start_new_session=True,
    )
    try:
        assert process.stdout is not None
        with trio.fail_after(30):
            assert b"ready" in await process.stdout.receive_some(64)
        os.kill(process.pid, signal.SIGSTOP)
        phase, _ = await _worker_stop.stop_process_tree(
            process=process, attempt_id="attempt_frozen", timings=TIMINGS, ask=None
        )
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    assert phase == "terminate"
    assert process.returncode == -signal.SIGTERM
    assert not marker.exists(), "the stopped worker ran again before the TERM"
