"""Names a package exports but loads on first use (a module `__getattr__`, PEP 562).

`maia.client` and `maia.cli` sit on the CLI's start-up path: importing every submodule they
re-export would load click, attrs classes and the registry for a command that needs none of
them. Each keeps a table of name → submodule and binds these two. (`maia.core` writes the
same few lines itself: it imports no layer above it, and this module is the `maia` package's.)
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, MutableMapping
from typing import Any


def lazy_exports(
    package: str, table: Mapping[str, str], namespace: MutableMapping[str, Any]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The package's `__getattr__` (imports the submodule `table` names, caches the value in
    `namespace`) and `__dir__` (every exported name)."""

    def get(name: str) -> Any:
        module = table.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module, package), name)
        namespace[name] = value
        return value

    def names() -> list[str]:
        return sorted(namespace.get("__all__", table))

    return get, names
