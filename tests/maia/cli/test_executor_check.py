"""`maia executor check NAME` runs the executor's version probe without a Node: the bundled
Claude Code binary is found at its pinned version; a missing binary exits 2 naming it; a
non-agent or unknown executor is a usage error."""

from __future__ import annotations

import json
from pathlib import Path

from tests.worker_bridge.agents._drive import need_claude

from ._node import Cli

CONFIG = {
    "executors": {
        "claude": {"kind": "claude-code"},
        "gone": {"kind": "claude-code", "command": "/nonexistent/claude"},
        "lines": {"kind": "exec", "argv": ["/bin/cat"]},
    }
}


def _cli(tmp_path: Path) -> Cli:
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.jsonc").write_text(json.dumps(CONFIG), encoding="utf-8")
    return Cli(home, tmp_path)


def test_the_bundled_binary_is_found_at_its_pinned_version(tmp_path: Path) -> None:
    """The probe names the binary, its version and the verified one; exit 0."""
    need_claude()
    done = _cli(tmp_path)("executor", "check", "claude", "--json")
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert found["ok"] is True
    assert found["version"] == found["pinned"]


def test_a_missing_binary_exits_2_naming_it(tmp_path: Path) -> None:
    """A `command` that does not exist: not found, the problem names the path."""
    done = _cli(tmp_path)("executor", "check", "gone")
    assert done.returncode == 2
    assert "/nonexistent/claude" in done.stdout


def test_an_unknown_or_non_agent_executor_is_refused(tmp_path: Path) -> None:
    """exec has no probe; an unknown name lists the configured ones."""
    cli = _cli(tmp_path)
    lines = cli("executor", "check", "lines")
    assert lines.returncode == 2
    assert "only agent kinds probe" in lines.stderr
    unknown = cli("executor", "check", "nope")
    assert unknown.returncode == 2
    assert "configured: claude, gone, lines" in unknown.stderr


def test_a_refusal_with_json_still_prints_one_document(tmp_path: Path) -> None:
    """`--json` on an exec or unknown executor: exit 2, the reason on stderr, and one JSON
    document on stdout (`ok: false` with the problem) instead of nothing."""
    cli = _cli(tmp_path)
    for name, said in (("lines", "only agent kinds probe (acp, claude-code, codex)"),
                       ("nope", "configured: claude, gone, lines")):  # fmt: skip
        done = cli("executor", "check", name, "--json")
        assert done.returncode == 2, done.stderr
        assert said in done.stderr
        document = json.loads(done.stdout)
        assert (document["executor"], document["ok"]) == (name, False)
        assert said in document["problem"]
