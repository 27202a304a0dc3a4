"""The test ACP agent behind 128 MiB of stderr in one line (run as a script): a harness's
stderr line is not bounded by the harness, so the worker must bound what it holds."""

from __future__ import annotations

import os
import runpy
import sys
from pathlib import Path

CHUNK = b"x" * (1024 * 1024)
for _ in range(int(os.environ.get("NOISY_STDERR_MIB", "128"))):
    os.write(2, CHUNK)
os.write(2, b"\n")
AGENT = Path(__file__).parents[1] / "worker_bridge" / "agents" / "acp_test_agent.py"
sys.argv = [str(AGENT)]
runpy.run_path(str(AGENT), run_name="__main__")
