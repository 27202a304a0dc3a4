"""`python -m maia.node`'s lean entry: the Node's start never imports click; the rest is click's."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from maia.node._entry import lean_start
from tests._node_process import run_until_serving_then_sigterm

TIMEOUT_S = 60
_NEVER_IN_THE_NODE = ("click", "maia.cli", "maia.client")


def _entry(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "maia.node", *args], capture_output=True,
                          text=True, timeout=TIMEOUT_S, check=False)  # fmt: skip


def _imported(stderr: str) -> set[str]:
    """The modules `python -X importtime` reported loading (one per `import time:` line)."""
    return set(re.findall(r"^import time:\s*\d+ \|\s*\d+ \|\s*(\S+)\s*$", stderr, re.M))


def _run_until_ready_then_sigterm(home: Path, *flags: str) -> tuple[int, str, str]:
    """A real foreground Node under `-X importtime`: (exit status, stdout, stderr)."""
    command = [sys.executable, "-P", "-X", "importtime", "-m", "maia.node", "start"]
    # files, not pipes: ~600 import lines could fill a pipe before the Node is ready
    out_path, err_path = home.parent / "stdout.txt", home.parent / "stderr.txt"
    with out_path.open("w") as out, err_path.open("w") as errors:
        status = run_until_serving_then_sigterm([*command, "--home", str(home), *flags], home,
                                                stdout=out, stderr=errors,
                                                timeout_s=TIMEOUT_S)  # fmt: skip
    return status, out_path.read_text(), err_path.read_text()


def test_a_real_node_started_as_the_detached_one_never_imports_click(tmp_path: Path) -> None:
    """`python -P -m maia.node start --home H --port 0` (the detached Node's command) runs a
    Node that, from start to SIGTERM, loads neither click nor maia.cli nor the SDK."""
    status, out, err = _run_until_ready_then_sigterm(tmp_path / "home", "--port", "0")
    assert status == 0, err[-2000:]
    assert "listening on ws://127.0.0.1:" in out
    assert "Maia Node stopped" in out
    modules = _imported(err)
    assert "maia.node._service" in modules
    assert "trio_websocket" in modules
    loaded = sorted(m for m in modules if m.split(".")[0] == "click" or
                    any(m == p or m.startswith(p + ".") for p in _NEVER_IN_THE_NODE))  # fmt: skip
    assert loaded == []


@pytest.mark.parametrize(
    ("argv", "parsed"),
    [
        (["start", "--home", "h", "--port", "0"], (Path("h"), 0)),
        (["start", "--port=65535", "--home=h"], (Path("h"), 65535)),
        (["start"], (None, 0)),
        (["start", "--port", "8"], (None, 8)),
    ],
)
def test_the_start_shapes_the_lean_entry_runs(argv: list[str], parsed: object) -> None:
    """`start` with only --home and --port (either spelling) is run by the lean entry."""
    assert lean_start(argv) == parsed


@pytest.mark.parametrize(
    "argv",
    [
        [], ["status"], ["stop", "--home", "h"], ["start", "--help"], ["start", "--detach"],
        ["start", "--port", "65536"], ["start", "--port", "-1"], ["start", "--port", "x"],
        ["start", "--port", "²"], ["start", "--port"], ["start", "--home", "a", "--home", "b"],
        ["start", "--home", ""], ["start", "--machines-listen", "127.0.0.1:0"],
        ["start", "extra"],
    ],
)  # fmt: skip
def test_every_other_command_line_goes_to_click(argv: list[str]) -> None:
    """Help, other commands, other flags and values click would refuse are left to click."""
    assert lean_start(argv) is None


def test_a_home_that_is_a_file_gets_clicks_error(tmp_path: Path) -> None:
    """A --home naming a file is click's to refuse (exit 2, its message), as before."""
    afile = tmp_path / "file"
    afile.write_text("x")
    assert lean_start(["start", "--home", str(afile)]) is None
    done = _entry("start", "--home", str(afile))
    assert done.returncode == 2
    assert "Invalid value for '--home'" in done.stderr
    assert "is a file" in done.stderr


def test_a_bad_port_and_start_help_are_clicks(tmp_path: Path) -> None:
    """`start --port 70000` exits 2 with click's message; `start --help` is click's help."""
    bad = _entry("start", "--port", "70000", "--home", str(tmp_path / "h"))
    assert bad.returncode == 2
    assert "Invalid value for '--port'" in bad.stderr
    helped = _entry("start", "--help")
    assert helped.returncode == 0
    assert "Usage: python -m maia.node start" in helped.stdout
    assert "--detach" in helped.stdout
    assert not (tmp_path / "h").exists()


def test_a_start_with_machine_flags_runs_through_click_the_same_way(tmp_path: Path) -> None:
    """`start --machines-listen 127.0.0.1:0` takes click's path (click loads) and its Node
    prints the same lines and exits 0 on SIGTERM."""
    flags = ("--machines-listen", "127.0.0.1:0")
    status, out, err = _run_until_ready_then_sigterm(tmp_path / "home", *flags)
    assert status == 0, err[-2000:]
    assert "listening on ws://127.0.0.1:" in out
    assert "Maia Node stopped" in out
    assert {"click", "maia.cli._node_commands", "maia.machines"} <= _imported(err)
