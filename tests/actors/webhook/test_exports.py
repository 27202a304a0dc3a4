"""The public names of `actors.webhook` are exported once each, and every one resolves."""

from __future__ import annotations

from pathlib import Path

from ..._exports import assert_once_and_resolving, own_exports, private_modules, public_definitions

ROOT = Path(__file__).resolve().parents[3]
PACKAGE = ROOT / "actors" / "webhook"


def test_public_names_exported_once() -> None:
    """Each public top-level class or function of a private module is re-exported once."""
    exported = own_exports(PACKAGE)
    assert_once_and_resolving("actors.webhook", exported)
    for path, name in public_definitions(private_modules(PACKAGE)):
        assert name in exported, f"{path.name}: {name} is not exported"
