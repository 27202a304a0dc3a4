"""The storage package's public surface."""

from __future__ import annotations

import ast
from pathlib import Path

import storage


def test_every_public_name_is_exported_once_and_resolves() -> None:
    """Each name re-exported by storage/__init__.py appears once and names a real object."""
    tree = ast.parse(Path(storage.__file__).read_text())
    names = [
        alias.asname or alias.name
        for node in tree.body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    ]
    assert len(names) == len(set(names))
    for name in names:
        assert getattr(storage, name) is not None
    for needed in (
        "open_storage",
        "append_event",
        "read_events",
        "run_mutation",
        "next_worker_epoch",
        "compare_and_set",
        "issue_preview",
        "consume_preview",
    ):
        assert needed in names
