"""Review fix (s7-fix): a stopped harness is signalled before its stdin closes. Claude Code
read the closed stdin of a worker whose Node was SIGKILLed as a denial of its pending tool
call and carried on; a harness must find SIGTERM pending by the time its input ends."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import pytest

from worker_bridge.workers._harness import HarnessProcess

# With SIGTERM blocked it waits for its stdin's end, then records whether SIGTERM was
# already pending then ("term") or not ("eof"), and exits.
HARNESS = """
import select, signal, sys
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
print("{}", flush=True)
select.select([sys.stdin], [], [], 30)
first = "term" if signal.SIGTERM in signal.sigpending() else "eof"
with open(sys.argv[1], "a") as log:
    log.write(first + "\\n")
"""


def test_stop_signals_the_harness_before_closing_its_stdin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When a stopped harness's stdin ends, SIGTERM is already pending for it. The signal
    is held back until the harness has recorded what it saw (at most 1 s), so the order of
    the two is what the harness reads, not a race."""
    log = tmp_path / "seen.txt"
    harness = HarnessProcess(
        [sys.executable, "-c", HARNESS, str(log)], env=dict(os.environ), cwd=str(tmp_path)
    )
    signal_group = harness._kill_group

    def held_back(sig: signal.Signals) -> None:
        deadline = time.monotonic() + 1.0
        while sig is signal.SIGTERM and not log.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        signal_group(sig)

    monkeypatch.setattr(harness, "_kill_group", held_back)
    try:
        ready = harness.next_line(30.0)
        assert ready is not None
        assert ready.kind == "json", ready
    finally:
        harness.stop()
    assert harness.exit_status(5.0) == 0
    assert log.read_text().splitlines() == ["term"]
