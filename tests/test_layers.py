"""The package layers of DESIGN.md: a package imports only from the layers above it.

Order, lowest first: worker_bridge, maia.protocol, storage, supervision, actors, the faces
(maia.node, maia.client, maia.cli, maia.console, maia.service, maia.observe), simulations.
`maia.config` (the typed configuration documents and their strict reader) sits with
`maia.protocol`: the spec's configuration contracts are protocol, and the Session actor reads
executors from them. The SDK never imports the Node: it runs in other processes.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LAYERS = ["worker_bridge", "maia.protocol", "storage", "supervision", "actors", "faces", "sims"]
FACES = ("maia.node", "maia.client", "maia.cli", "maia.console", "maia.service", "maia.observe")


def layer_of(module: str) -> str | None:
    """The layer a dotted module name belongs to, or None for outside code."""
    top = module.split(".")[0]
    if top == "maia":
        if module == "maia" or module.startswith(("maia.protocol", "maia.config")):
            return "maia.protocol"
        return "faces"
    if top == "simulations":
        return "sims"
    return top if top in LAYERS else None


def imports_of(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module)
    return found


def module_files() -> list[tuple[str, Path]]:
    files = []
    for package in ("worker_bridge", "maia", "storage", "supervision", "actors", "simulations"):
        for path in sorted((ROOT / package).rglob("*.py")):
            dotted = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            files.append((dotted, path))
    return files


def test_modules_import_only_from_layers_above() -> None:
    """No module imports from a layer below its own."""
    violations = []
    for module, path in module_files():
        own = layer_of(module)
        assert own is not None
        for imported in imports_of(path):
            other = layer_of(imported)
            if other is not None and LAYERS.index(other) > LAYERS.index(own):
                violations.append(f"{module} imports {imported}")
    assert violations == []


def test_sdk_never_imports_the_node() -> None:
    """maia.client runs in other processes: it imports nothing of the Node or its services."""
    for path in sorted((ROOT / "maia" / "client").rglob("*.py")):
        for imported in imports_of(path):
            assert not imported.startswith(("maia.node", "maia.service", "maia.observe")), (
                f"{path.name} imports {imported}"
            )


def test_layer_of_knows_the_faces() -> None:
    """Every face package is classified as a face, the protocol as the protocol layer."""
    assert all(layer_of(face) == "faces" for face in FACES)
    assert layer_of("maia.protocol._ids") == "maia.protocol"
    assert layer_of("maia.config") == "maia.protocol"
    assert layer_of("os") is None
