"""What a harness prints ahead of the worker is bounded in bytes, not only in lines: a
harness printing 48 JSON lines of 1 MiB each while the worker reads none (as while it waits
on an approval) had all 48 MiB parsed and queued (1,024 lines of up to 32 MiB could be
32 GiB); now the reader stops at the byte budget and the harness waits on its full pipe."""

from __future__ import annotations

import os
import sys
import time
import uuid
from pathlib import Path

from worker_bridge.workers import _harness
from worker_bridge.workers._harness import HarnessProcess

LINES, LINE_BYTES = 48, 1024 * 1024
WAIT_S = 60


def test_the_reader_holds_at_most_its_byte_budget(tmp_path: Path) -> None:
    """The reader waits for room (or the harness is done) with the queue under the budget
    plus one line; all lines still arrive, in order, once the worker reads."""
    done = tmp_path / f"done-{uuid.uuid4().hex}"
    code = (
        "import json, os, sys\n"
        f"for i in range({LINES}):\n"
        f"    sys.stdout.write(json.dumps({{'i': i, 'pad': 'x' * {LINE_BYTES}}}) + '\\n')\n"
        "    sys.stdout.flush()\n"
        f"open({str(done)!r}, 'w').close()\n"
        "sys.stdin.read()\n"
    )
    harness = HarnessProcess([sys.executable, "-c", code], env=dict(os.environ))
    try:
        deadline = time.monotonic() + WAIT_S
        while not (done.exists() or harness.statistics().reader_waiting):
            assert time.monotonic() < deadline, "the harness neither finished nor was held"
            time.sleep(0.05)
        queued = harness.statistics().queued_bytes
        assert queued <= _harness.QUEUE_BYTES + LINE_BYTES + 64, queued
        seen: list[int] = []
        while len(seen) < LINES:
            line = harness.next_line(WAIT_S)
            assert line is not None
            assert line.kind == "json", line.value
            seen.append(line.value["i"])
        assert seen == list(range(LINES))
    finally:
        harness.stop()
