"""The foreground start says "listening" once: a real Node started by `maia node start` (the
CLI) and by `python -m maia.node start` (the lean entry), its stdout and stderr together."""

from __future__ import annotations

import logging
import re
import subprocess
import sys
from pathlib import Path

import pytest

from maia.node._foreground import _AnnouncedOnce
from tests._node_process import run_until_serving_then_sigterm

TIMEOUT_S = 60
_READY = re.compile(r"^Maia Node node_\S+ \(pid \d+\) listening on ws://127\.0\.0\.1:\d+/api/v1$")


def _run_until_ready_then_sigterm(home: Path, argv: list[str]) -> tuple[int, list[str]]:
    """A real foreground Node, stdout and stderr into one file as a terminal shows them:
    (exit status, every line it printed)."""
    output = home.parent / "output.txt"
    with output.open("w") as sink:
        status = run_until_serving_then_sigterm([*argv, "--home", str(home), "--port", "0"],
                                                home, stdout=sink, stderr=subprocess.STDOUT,
                                                timeout_s=TIMEOUT_S)  # fmt: skip
    return status, output.read_text().splitlines()


@pytest.mark.parametrize(
    "argv",
    [
        [sys.executable, "-m", "maia", "node", "start"],  # maia node start (click)
        [sys.executable, "-P", "-m", "maia.node", "start"],  # the lean entry (--detach's child)
    ],
    ids=["maia-node-start", "python-m-maia.node"],
)
def test_a_foreground_start_prints_listening_once(tmp_path: Path, argv: list[str]) -> None:
    """From start to SIGTERM the Node prints one "listening" line, the ready line (its ID,
    pid and URL), then that it stopped; it exits 0."""
    status, lines = _run_until_ready_then_sigterm(tmp_path / "home", argv)
    assert status == 0, lines[-20:]
    listening = [line for line in lines if "listening on" in line]
    assert len(listening) == 1, listening
    assert _READY.match(listening[0]), listening
    assert lines[-1] == "Maia Node stopped"


def test_only_the_first_listening_record_is_left_out() -> None:
    """The filter drops the tree's first "listening" record at every handler, and lets a
    later one (the API server restarted) and any other record through."""
    announced = _AnnouncedOnce()

    def record(message: str, *args: object) -> logging.LogRecord:
        return logging.LogRecord("maia.node", logging.INFO, __file__, 1, message, args, None)

    first = record("Maia Node %s (epoch %d) listening on %s", "node_x", 1, "ws://127.0.0.1:1/")
    other = record("storage opened")
    again = record("Maia Node %s (epoch %d) listening on %s", "node_x", 1, "ws://127.0.0.1:1/")
    assert announced.filter(other)
    assert not announced.filter(first)
    assert not announced.filter(first)  # the same record at a second handler
    assert announced.filter(again)
