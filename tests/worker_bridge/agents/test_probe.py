"""The executor probe (for `maia executor check`) against the real binaries and the test agent."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from worker_bridge.workers.agents import PINNED, probe, worker_launch

from ._drive import need_claude, need_codex


def test_probe_finds_the_pinned_claude_code() -> None:
    """The bundled Claude Code is found, is the pinned version and has every flag used."""
    path = need_claude()
    found = probe("claude-code", {})
    assert found.ok, found
    assert (found.path, found.version, found.pinned) == (path, PINNED["claude-code"], "2.1.332")


def test_probe_finds_the_pinned_codex() -> None:
    """The packaged Codex is found, is the pinned version and has `app-server`."""
    path = need_codex()
    found = probe("codex", {})
    assert found.ok, found
    assert (found.path, found.version) == (path, PINNED["codex"])


def test_probe_names_a_missing_command(tmp_path: Path) -> None:
    """A configured command that does not exist: not found, with the reason."""
    found = probe("claude-code", {"command": str(tmp_path / "nope")})
    assert not found.found
    assert not found.ok
    assert "nope" in (found.problem or "")


def test_probe_of_an_acp_agent_runs_initialize(tmp_path: Path) -> None:
    """The test agent answers `initialize`; a missing agent is reported as not found."""
    agent = [os.path.abspath(sys.executable), str(Path(__file__).with_name("acp_test_agent.py"))]
    assert probe("acp", {}, agent).ok
    missing = probe("acp", {}, [str(tmp_path / "no-agent")])
    assert not missing.found
    assert "no-agent" in (missing.problem or "")


def test_worker_launch_maps_kinds_to_modules_and_options() -> None:
    """Each agent kind names its worker module; acp's argv travels as a JSON option."""
    assert worker_launch("codex", {"model": "m"}) == ("worker_bridge.workers.codex", {"model": "m"})
    module, options = worker_launch("acp", {}, ["gemini", "--acp"])
    assert (module, options) == ("worker_bridge.workers.acp", {"argv": '["gemini", "--acp"]'})
