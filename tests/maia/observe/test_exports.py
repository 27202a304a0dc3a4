"""The observe package's public surface and its place in the layers."""

from __future__ import annotations

import ast
from pathlib import Path

import maia.observe

from ..._exports import bound_names


def test_every_public_name_is_exported_once_and_resolves() -> None:
    """Each name re-exported by maia/observe/__init__.py appears once and names a real object."""
    names = bound_names(Path(maia.observe.__file__))
    assert len(names) == len(set(names))
    for name in names:
        assert getattr(maia.observe, name) is not None
    for needed in ("open_hub", "ObservationHub", "serve_observation_connection", "SUBPROTOCOL"):
        assert needed in names


def test_observe_never_imports_the_node_or_the_sdk() -> None:
    """maia.observe sits below maia.node and beside the SDK: it imports neither."""
    folder = Path(maia.observe.__file__).parent
    for module in folder.glob("*.py"):
        tree = ast.parse(module.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module:
                assert not node.module.startswith(("maia.node", "maia.client")), module.name
