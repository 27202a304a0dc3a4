"""Public names: each is exported from its package once; workers stay on the stdlib."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import subprocess
import sys

import pytest

import supervision.workers
import worker_bridge


def _defined_public(module_name: str) -> dict[str, object]:
    module = importlib.import_module(module_name)
    return {
        name: value
        for name, value in vars(module).items()
        if not name.startswith("_")
        and (inspect.isclass(value) or inspect.isfunction(value))
        and getattr(value, "__module__", None) == module_name
    }


@pytest.mark.parametrize(
    "module_name",
    [
        f"worker_bridge.{info.name}"
        for info in pkgutil.iter_modules(worker_bridge.__path__)
        if info.name.startswith("_")
    ],
)
def test_every_public_name_of_worker_bridge_is_exported(module_name: str) -> None:
    """Each class and function a private module defines is `worker_bridge.<name>`."""
    for name, value in _defined_public(module_name).items():
        if name in ("Field", "FrameSpec"):  # schema plumbing, reached through FRAMES
            continue
        assert getattr(worker_bridge, name) is value, f"{module_name}.{name}"


@pytest.mark.parametrize(
    "module_name",
    [
        "supervision._worker_config",
        "supervision._worker_handle",
        "supervision._worker_stop",
        "supervision._worker_types",
        "supervision._worker_supervisor",
        "supervision._process_group",
    ],
)
def test_every_public_name_of_the_worker_supervisor_is_exported(module_name: str) -> None:
    """Each class and function of the supervisor's modules is `supervision.workers.<name>`."""
    skip = {"descendants", "signal_group", "sweep"}  # process plumbing, used internally
    for name, value in _defined_public(module_name).items():
        if name not in skip:
            assert getattr(supervision.workers, name) is value, f"{module_name}.{name}"


def test_a_worker_imports_neither_attrs_nor_trio_nor_maia() -> None:
    """The echo worker starts on the stdlib: start-up stays cheap, the layer stays lowest."""
    code = (
        "import sys, worker_bridge.workers.echo, worker_bridge.workers.exec\n"
        "bad = [m for m in ('attrs', 'trio', 'cattrs', 'maia', 'typing') if m in sys.modules]\n"
        "print(','.join(bad))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=30
    )
    assert result.stdout.strip() == ""


def test_worker_bridge_imports_nothing_of_maia() -> None:
    """The lowest layer: no module of worker_bridge imports maia, storage, actors, supervision."""
    for info in pkgutil.walk_packages(worker_bridge.__path__, "worker_bridge."):
        source = inspect.getsource(importlib.import_module(info.name))
        for layer in ("maia", "storage", "actors", "supervision"):
            assert f"import {layer}" not in source, info.name
            assert f"from {layer}" not in source, info.name
