"""The public names of `actors.webhook` are exported once each, and every one resolves."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
PACKAGE = ROOT / "actors" / "webhook"


def _exports() -> list[str]:
    tree = ast.parse((PACKAGE / "__init__.py").read_text(encoding="utf-8"))
    names = []
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            for alias in node.names:
                assert alias.asname == alias.name, f"{alias.name} is not re-exported as itself"
                names.append(alias.name)
    return names


def test_public_names_exported_once() -> None:
    """Each public top-level class or function of a private module is re-exported once."""
    exported = _exports()
    assert len(exported) == len(set(exported))
    module = importlib.import_module("actors.webhook")
    for name in exported:
        assert hasattr(module, name)
    for path in sorted(PACKAGE.glob("_*.py")):
        if path.name == "__init__.py":
            continue
        body = ast.parse(path.read_text(encoding="utf-8")).body
        kinds = (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
        for name in (n.name for n in body if isinstance(n, kinds)):
            if not name.startswith("_"):
                assert name in exported, f"{path.name}: {name} is not exported"
