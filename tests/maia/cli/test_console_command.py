"""`maia console [--home DIR] [--node URL]`: options passed through, anything else refused."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from maia.console._launch import _console_options


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ([], {}),
        (["--home", "/x"], {"home": "/x"}),
        (
            ["--home=/x", "--node", "ws://127.0.0.1:1/api/v1"],
            {"home": "/x", "url": "ws://127.0.0.1:1/api/v1"},
        ),
        (["--home"], None),
        (["--home="], None),
        (["--home", "/a", "--home", "/b"], None),
        (["--token", "t"], None),
        (["extra"], None),
    ],
)
def test_console_options(args: list[str], expected: dict[str, str] | None) -> None:
    """Only --home and --node, once each and with a value, are console options."""
    assert _console_options(args) == expected


def test_console_with_a_home_and_no_node_says_how_to_start_it(tmp_path: Path) -> None:
    """A real `maia console --home DIR` without a Node exits 6 naming the start command."""
    home = tmp_path / "other-home"
    done = subprocess.run(
        [sys.executable, "-m", "maia", "console", "--home", str(home)],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert done.returncode == 6
    assert "maia node start --detach" in done.stderr
    assert str(home) in done.stderr
    assert done.stdout == ""


def test_console_refuses_unknown_options() -> None:
    """`maia console --bogus` is a usage error (exit 2) with the usage on stderr."""
    done = subprocess.run(
        [sys.executable, "-m", "maia", "console", "--bogus"],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert done.returncode == 2
    assert "usage: maia console" in done.stderr
