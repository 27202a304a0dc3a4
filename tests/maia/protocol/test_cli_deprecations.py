"""Deprecated CLI names: commands, flags and renamed ops' commands still run, and say so."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import maia.protocol
from maia.cli import main
from maia.cli._deprecated import PREFIX, rewrite_deprecated
from maia.protocol import REGISTRY, REGISTRY_VERSION, Deprecation, build_registry

REPO = Path(__file__).resolve().parents[3]


def _entry(kind: Any, name: str, replacement: str | None) -> Deprecation:
    return Deprecation(kind=kind, name=name, replacement=replacement,
                       deprecated_in=REGISTRY_VERSION, deprecated_on="2026-12-01",
                       remove_after="2027-03-01")  # fmt: skip


def test_commands_and_flags_are_rewritten_with_a_diagnostic_each() -> None:
    """A command alias, a flag alias (with =value) and a renamed op's command are rewritten."""
    table = (
        _entry("command", "session peek", "session show"),
        _entry("flag", "session list --every", "session list --all"),
        _entry("operation", "project.ls", "project.list"),
    )
    args, found = rewrite_deprecated(["session", "peek", "s1", "--json"], table)
    assert args == ["session", "show", "s1", "--json"]
    assert [d["name"] for d in found] == ["session peek"]
    args, found = rewrite_deprecated(["session", "list", "--every=1", "--json"], table)
    assert args == ["session", "list", "--all=1", "--json"]
    assert found[0]["kind"] == "flag"
    assert found[0]["code"] == "deprecated"
    args, found = rewrite_deprecated(["project", "ls"], table)
    assert args == ["project", "list"]
    assert found[0]["replacement"] == "project.list"


def test_operands_after_double_dash_and_other_commands_are_left_alone() -> None:
    """`--` ends what is read as flags; a line not using a deprecated name is unchanged."""
    table = (_entry("flag", "turn send --every", "turn send --all"),)
    line = ["turn", "send", "s1", "--", "--every"]
    assert rewrite_deprecated(line, table) == (line, [])
    assert rewrite_deprecated(["session", "list", "--every"], table) == (
        ["session", "list", "--every"],
        [],
    )


def test_the_cli_runs_a_deprecated_command_and_prints_its_diagnostic(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`maia contract verify` (a planted alias of `contract check`) runs check and prints
    one machine-readable `maia: deprecated:` line on stderr."""
    alias = _entry("command", "contract verify", "contract check")
    planted = build_registry(REGISTRY, deprecations=(alias,), registry_version=REGISTRY_VERSION)
    monkeypatch.setattr(maia.protocol, "REGISTRY", planted)
    main(["contract", "verify", "--root", str(REPO), "--json"])
    out, err = capsys.readouterr()
    assert set(json.loads(out)) == {"ok", "stale", "problems"}  # check ran
    lines = [line for line in err.splitlines() if line.startswith(PREFIX)]
    assert len(lines) == 1
    assert json.loads(lines[0][len(PREFIX) :]) == alias.diagnostic()
