"""The public names of `actors` and `supervision` (this issue's modules) are exported once."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
OWNED = {
    "actors": (
        "_actor",
        "_aggregate",
        "_clocks",
        "_diagrams",
        "_effects",
        "_errors",
        "_flush",
        "_graph",
        "_notify",
        "_registry",
        "_runtime",
        "_table",
        "_timers",
        "_workers",
        "_write",
    ),
    "supervision": ("_child", "_restart", "_supervisor"),
}
NOT_EXPORTED = {
    "main",
    "render_document",
    "render_mermaid",
    "render_rows",
    "DOC_PATH",
    "kind_tables",
    "kinds",
    "render_graph",
    "runtime_edges",
    # internals of the write path and the timers, used by the runtime's own modules
    "plan_change",
    "state_timer_name",
    "arm_timer",
    "disarm_timer",
    "load_timers",
    "TimerRow",
    "EventOwner",
    "recover",
    "Workers",
    "SessionKind",
}


def _exports(package: str) -> list[str]:
    tree = ast.parse((ROOT / package / "__init__.py").read_text(encoding="utf-8"))
    names = []
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            for alias in node.names:
                assert alias.asname == alias.name, f"{alias.name} is not re-exported as itself"
                names.append(alias.name)
    return names


@pytest.mark.parametrize("package", sorted(OWNED))
def test_public_names_exported_once(package: str) -> None:
    """Each public top-level class or function of an owned module is re-exported exactly once."""
    exported = _exports(package)
    assert len(exported) == len(set(exported))
    module = importlib.import_module(package)
    for name in exported:
        assert hasattr(module, name)
    for private in OWNED[package]:
        source = (ROOT / package / f"{private}.py").read_text(encoding="utf-8")
        for node in ast.parse(source).body:
            if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                name = node.name
                if not name.startswith("_") and name not in NOT_EXPORTED:
                    assert name in exported, f"{package}.{private}.{name} is not exported"
