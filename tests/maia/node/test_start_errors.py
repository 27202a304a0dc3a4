"""Starting for real, as a user does: the cause of a failed start is printed and logged
(this run's lines only), a full disk names the file, and a project folder whose own
packages are named like Maia's cannot shadow them."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from maia.core import read_discovery
from maia.node import NodeHome

TIMEOUT_S = 60
MAIA = str(Path(sys.executable).parent / "maia")  # the console script a user runs
SHADOWS = ("storage", "actors", "supervision", "maia", "worker_bridge")


def _start(
    home: Path,
    *args: str,
    cwd: Path | None = None,
    preexec_fn: Callable[[], object] | None = None,
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [MAIA, "node", "start", *args, "--home", str(home)],
        capture_output=True, text=True, timeout=TIMEOUT_S, check=False, cwd=cwd,
        preexec_fn=preexec_fn,
    )  # fmt: skip


def _bad_config(home: Path) -> None:
    home.mkdir(mode=0o700, parents=True)
    (home / "config.jsonc").write_text('{\n  "a": 1,\n  "a": 2\n}\n')


def test_foreground_start_prints_the_real_cause(tmp_path: Path) -> None:
    """A duplicate key in config.jsonc: exit 1 with the file, line, column and the key."""
    home = tmp_path / "home"
    _bad_config(home)
    failed = _start(home)
    assert failed.returncode == 1
    assert "config.jsonc:3:3" in failed.stderr
    assert "duplicate key 'a'" in failed.stderr
    assert "Traceback" not in failed.stderr


def test_detached_start_prints_this_runs_cause_only(tmp_path: Path) -> None:
    """--detach prints the cause from node.log, never lines an earlier run left there."""
    home = tmp_path / "home"
    _bad_config(home)
    (home / "node.log").write_text("an earlier run's line\n")
    failed = _start(home, "--detach")
    assert failed.returncode == 1
    assert "config.jsonc:3:3" in failed.stderr
    assert "an earlier run's line" not in failed.stderr
    assert "duplicate key 'a'" in (home / "node.log").read_text()


def test_a_start_on_a_full_disk_names_the_file(tmp_path: Path) -> None:
    """Writes that fail (RLIMIT_FSIZE 0 stands in for a full disk): the file and the cause."""
    home = tmp_path / "home"
    failed = _start(home, preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0)))
    assert failed.returncode == 1
    assert f"cannot write {home / 'node.lock'}: File too large" in failed.stderr
    assert "Traceback" not in failed.stderr


def _project_with_shadows(project: Path, names: tuple[str, ...] = SHADOWS) -> Path:
    for name in names:
        (project / name).mkdir(parents=True)
        (project / name / "__init__.py").write_text(f"raise ImportError('shadowed: {name}')\n")
    return project


def test_detached_node_starts_from_a_folder_that_shadows_maias_packages(tmp_path: Path) -> None:
    """From a folder holding packages storage, actors, supervision, maia: it starts."""
    project = _project_with_shadows(tmp_path / "project")
    home = NodeHome(tmp_path / "home")
    started = _start(home.root, "--detach", cwd=project)
    try:
        assert started.returncode == 0, started.stderr + home.log_path.read_text()
        # The SDK from a script whose own folder (on sys.path, as for any script) holds
        # packages storage, actors and supervision: the SDK imports none of Maia's. (A
        # package named `maia` beside a script shadows Maia itself, as for any library.)
        scripts = _project_with_shadows(tmp_path / "scripts", ("storage", "actors", "supervision"))
        script = scripts / "status.py"
        script.write_text(
            "import sys, trio\nfrom maia.client import open_client\n"
            "async def main():\n    async with open_client(home=sys.argv[1]) as c:\n"
            "        print((await c.node.status()).node_id)\ntrio.run(main)\n"
        )
        status = subprocess.run(
            [sys.executable, str(script), str(home.root)],
            capture_output=True, text=True, timeout=TIMEOUT_S, check=False, cwd=project,
        )  # fmt: skip
        record = read_discovery(home.discovery_path)
        assert record is not None
        assert status.returncode == 0, status.stderr
        assert status.stdout.strip() == record.node_id
    finally:
        stopped = subprocess.run(
            [MAIA, "node", "stop", "--home", str(home.root)],
            capture_output=True, text=True, timeout=TIMEOUT_S, check=False,
        )  # fmt: skip
        assert stopped.returncode == 0, stopped.stderr
    assert not os.path.exists(home.discovery_path)
