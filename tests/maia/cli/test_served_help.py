"""The commands `maia` serves itself (node start|stop|backup, config check, executor check)
take -h as every other command does (a real `maia` process)."""

from __future__ import annotations

import subprocess
import sys

import pytest

MAIA = [sys.executable, "-c", "import sys; from maia.cli import main; sys.exit(main())"]


@pytest.mark.parametrize(
    "path",
    [["node", "start"], ["node", "stop"], ["node", "backup"], ["config", "check"],
     ["executor", "check"]],
)  # fmt: skip
def test_dash_h_prints_the_help(path: list[str]) -> None:
    done = subprocess.run([*MAIA, *path, "-h"], capture_output=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode().startswith(f"Usage: maia {' '.join(path)} ")
    assert done.stderr == b""
