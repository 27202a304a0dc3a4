"""The public names of `actors.machine` and `maia.machines` are exported once each, and every
one resolves."""

from __future__ import annotations

from pathlib import Path

import pytest

from .._exports import assert_once_and_resolving, own_exports, private_modules, public_definitions

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("package", ["actors.machine", "maia.machines"])
def test_public_names_exported_once(package: str) -> None:
    """Each public top-level class or function of a private module is re-exported once."""
    folder = ROOT.joinpath(*package.split("."))
    exported = own_exports(folder)
    assert_once_and_resolving(package, exported)
    missing = [f"{path.name}: {name}" for path, name in public_definitions(private_modules(folder))
               if name not in exported]  # fmt: skip
    assert missing == []
