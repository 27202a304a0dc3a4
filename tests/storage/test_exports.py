"""The storage package's public surface."""

from __future__ import annotations

from pathlib import Path

import storage

from .._exports import bound_names


def test_every_public_name_is_exported_once_and_resolves() -> None:
    """Each name re-exported by storage/__init__.py appears once and names a real object."""
    names = bound_names(Path(storage.__file__))
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
