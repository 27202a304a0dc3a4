"""Every public class and function of the routine kind's private modules is exported once
from `actors.routine` (the doc generator's entry points excepted)."""

from __future__ import annotations

from pathlib import Path

import actors.routine

from ..._exports import assert_once_and_resolving, own_exports, private_modules, public_definitions

FOLDER = Path(actors.routine.__file__).resolve().parent
NOT_EXPORTED = {"main", "render_tables", "splice"}


def test_public_names_exported_once() -> None:
    """Each public top-level class or function is re-exported exactly once, as itself."""
    exported = own_exports(FOLDER)
    assert_once_and_resolving("actors.routine", exported)
    for path, name in public_definitions(private_modules(FOLDER)):
        if name not in NOT_EXPORTED:
            assert name in exported, f"actors.routine.{path.stem}.{name}"
