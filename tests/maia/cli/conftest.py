"""Every CLI test runs with its own empty MAIA_HOME and no MAIA_NODE, so no test can find,
start or stop a Node of the person running the suite."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "maia-home"
    monkeypatch.setenv("MAIA_HOME", str(home))
    monkeypatch.delenv("MAIA_NODE", raising=False)
    monkeypatch.delenv("_MAIA_COMPLETE", raising=False)
    return home
