"""The public names of `actors` and `supervision` (this issue's modules) are exported once."""

from __future__ import annotations

from pathlib import Path

import pytest

from .._exports import assert_once_and_resolving, own_exports, public_definitions

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
    "disarm_kind",
    "load_timers",
    "TimerRow",
    "EventOwner",
    "recover",
    "Workers",
    "SessionKind",
}


@pytest.mark.parametrize("package", sorted(OWNED))
def test_public_names_exported_once(package: str) -> None:
    """Each public top-level class or function of an owned module is re-exported exactly once."""
    exported = own_exports(ROOT / package)
    assert_once_and_resolving(package, exported)
    modules = [ROOT / package / f"{private}.py" for private in OWNED[package]]
    for path, name in public_definitions(modules):
        if name not in NOT_EXPORTED:
            assert name in exported, f"{package}.{path.stem}.{name} is not exported"
