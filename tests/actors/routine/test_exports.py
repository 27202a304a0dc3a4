"""Every public class and function of the routine kind's private modules is exported once
from `actors.routine` (the doc generator's entry points excepted)."""

from __future__ import annotations

import ast
from pathlib import Path

import actors.routine

FOLDER = Path(actors.routine.__file__).resolve().parent
NOT_EXPORTED = {"main", "render_tables", "splice"}


def test_public_names_exported_once() -> None:
    """Each public top-level class or function is re-exported exactly once, as itself."""
    tree = ast.parse((FOLDER / "__init__.py").read_text(encoding="utf-8"))
    exported = [alias.name for node in tree.body if isinstance(node, ast.ImportFrom)
                for alias in node.names]  # fmt: skip
    assert len(exported) == len(set(exported))
    for name in exported:
        assert hasattr(actors.routine, name)
    for path in sorted(FOLDER.glob("_*.py")):
        if path.name == "__init__.py":
            continue
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                if node.name.startswith("_") or node.name in NOT_EXPORTED:
                    continue
                assert node.name in exported, f"actors.routine.{path.stem}.{node.name}"
