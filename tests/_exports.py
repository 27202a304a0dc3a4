"""Helpers of the exports tests: what a package's `__init__.py` re-exports, and what its
private modules define in public (each such name is exported once, as itself)."""

from __future__ import annotations

import ast
import importlib
from collections.abc import Iterable, Iterator
from pathlib import Path

DEFINITIONS = (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)


def bound_names(init: Path) -> list[str]:
    """Every name the module binds with a top-level `from … import`, as it binds it."""
    tree = ast.parse(init.read_text("utf-8"))
    return [
        alias.asname or alias.name
        for node in tree.body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    ]


def own_exports(folder: Path) -> list[str]:
    """The names a package's `__init__.py` takes from its own modules (`from ._x import`, at
    top level or, for names it loads on first use, under a top-level `if TYPE_CHECKING:`),
    each asserted to be re-exported as itself."""
    tree = ast.parse((folder / "__init__.py").read_text(encoding="utf-8"))
    names = []
    top = [n for node in tree.body for n in (node.body if isinstance(node, ast.If) else [node])]
    for node in top:
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            for alias in node.names:
                assert alias.asname == alias.name, f"{alias.name} is not re-exported as itself"
                names.append(alias.name)
    return names


def assert_once_and_resolving(package: str, names: list[str]) -> None:
    """No name twice, and each one an attribute of the imported package."""
    assert len(names) == len(set(names))
    module = importlib.import_module(package)
    for name in names:
        assert hasattr(module, name), name


def private_modules(folder: Path) -> list[Path]:
    """The package's private modules (`_*.py`, not `__init__.py`), sorted."""
    return [path for path in sorted(folder.glob("_*.py")) if path.name != "__init__.py"]


def public_definitions(paths: Iterable[Path]) -> Iterator[tuple[Path, str]]:
    """(module, name) for each public top-level class or function the modules define."""
    for path in paths:
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, DEFINITIONS) and not node.name.startswith("_"):
                yield path, node.name
