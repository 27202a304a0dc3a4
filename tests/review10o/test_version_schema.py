"""`maia version --schema` is refused, never run (spec: Schema-only inspection: an
unregistered command fails, and schema mode never falls through to execution): `version` is
no registered resource command, so `--schema` and `--schema=input` exit 2 with empty stdout
and a short message naming the option; it printed the version summary, exit 0. `version`
alone still prints it, and takes no other argument (the CLI in its own process)."""

from __future__ import annotations

import subprocess
import sys

import pytest


def _maia(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "maia", *argv], capture_output=True, text=True,
                          timeout=60, check=False)  # fmt: skip


@pytest.mark.parametrize(
    ("argv", "says"),
    [(["--schema"], "--schema"), (["--schema=input"], "--schema"), (["extra"], "no arguments")],
)
def test_version_refuses_schema_mode_and_arguments(argv: list[str], says: str) -> None:
    done = _maia("version", *argv)
    assert (done.returncode, done.stdout) == (2, ""), done
    assert says in done.stderr
    assert len(done.stderr) <= 300
    assert done.stderr.startswith("maia: ")


def test_version_alone_prints_the_summary() -> None:
    done = _maia("version")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("maia ")
    assert "registry sha256:" in done.stdout
