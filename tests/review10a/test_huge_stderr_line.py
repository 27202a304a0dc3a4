"""A harness printing one 128 MiB stderr line (no newline until the end) through a real Node:
the worker keeps only a bounded tail of stderr, so its peak memory stays far below the line
(docs/agents.md: no harness output can make the worker grow), and the turn completes."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.maia.agents._node import node_with, send, wait_turn, worker_pid
from tests.maia.cli._node import Cli
from tests.worker_bridge.agents._drive import base_env

AGENT = Path(__file__).with_name("noisy_acp_agent.py")
LINE_MIB = 128


@pytest.fixture(scope="module")
def cli(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cli]:
    pytest.importorskip("acp")
    base = tmp_path_factory.mktemp("noisy")
    executor = {"kind": "acp", "argv": [sys.executable, str(AGENT)],
                "env": ["HOME", "ACP_TEST_STATE", "NOISY_STDERR_MIB"]}  # fmt: skip
    config = json.dumps({"executors": {"noisy": executor}})
    env = {**base_env(base / "agent-home"), "ACP_TEST_STATE": str(base / "acp-state.json"),
           "NOISY_STDERR_MIB": str(LINE_MIB)}  # fmt: skip
    with node_with(base, config, env) as node:
        created = node("session", "create", "--title", "agent", "--executor", "user:noisy")
        assert created.returncode == 0, created.stderr
        yield node


def peak_kib(pid: int) -> int:
    """VmHWM of a live process (its peak resident set), in KiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError("no VmHWM")


def test_a_huge_stderr_line_leaves_the_worker_small_and_the_turn_completes(cli: Cli) -> None:
    """Peak RSS of the worker under half the line; the turn's reply is the agent's."""
    shown = wait_turn(cli, send(cli, "hello"))
    assert shown["turn"]["outputText"] == "echo #1: hello", shown
    assert peak_kib(worker_pid(cli)) < LINE_MIB * 1024 // 2
