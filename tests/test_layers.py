"""The package layers of DESIGN.md: a package imports only from the layers above it, and no
two subpackages import each other, directly or around a cycle.

Order, lowest first: worker_bridge, maia.core, maia.protocol (with maia.config: the spec's
configuration contracts are protocol), storage, supervision, actors, then the faces, which
form a DAG of their own (`FACE_DEPENDS`): the service layer, the observation hub, the Node,
the SDK, the CLI, the console; simulations last. The SDK never imports the Node and the Node
never imports the SDK: the formats both read (the discovery file) live in maia.core.

Imports are read statically (every `import` and `from` anywhere in a module, deferred ones
inside functions included). `__main__` modules are entry scripts that nothing imports, so
they may sit on top of everything and are left out.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("worker_bridge", "maia", "storage", "supervision", "actors", "simulations")
LAYERS = [
    "worker_bridge",
    "maia.core",
    "maia.protocol",
    "storage",
    "supervision",
    "actors",
    "faces",
    "sims",
]
FACES = (
    "maia.service",
    "maia.observe",
    "maia.node",
    "maia.machines",
    "maia.client",
    "maia.cli",
    "maia.console",
    "maia.conformance",
)
# Which faces a face may import (beyond every layer below the faces).
FACE_DEPENDS: dict[str, frozenset[str]] = {
    "maia.service": frozenset(),
    "maia.observe": frozenset(),
    "maia.node": frozenset({"maia.service", "maia.observe"}),
    "maia.client": frozenset(),
    "maia.machines": frozenset({"maia.node", "maia.service", "maia.observe"}),
    "maia.cli": frozenset({"maia.client", "maia.node", "maia.conformance", "maia.machines"}),
    "maia.console": frozenset({"maia.cli", "maia.client"}),
    "maia.conformance": frozenset({"maia.node", "maia.observe"}),  # it starts Nodes
}


def layer_of(module: str) -> str | None:
    """The layer a dotted module name belongs to, or None for outside code."""
    top = module.split(".")[0]
    if top == "maia":
        if module == "maia" or module.startswith("maia.core"):
            return "maia.core"  # the bare `maia` package holds only __version__
        if module.startswith(("maia.protocol", "maia.config")):
            return "maia.protocol"
        return "faces"
    if top == "simulations":
        return "sims"
    return top if top in LAYERS else None


def face_of(module: str) -> str | None:
    """The face package a module belongs to (`maia.cli._main` -> `maia.cli`), or None."""
    return next((f for f in FACES if module == f or module.startswith(f + ".")), None)


def imports_of(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module)
    return found


def module_files(root: Path = ROOT, packages: tuple[str, ...] = PACKAGES) -> list[tuple[str, Path]]:
    """(dotted name, path) of every library module under `root`'s packages."""
    files = []
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            if path.name == "__main__.py":
                continue
            dotted = ".".join(path.relative_to(root).with_suffix("").parts)
            files.append((dotted, path))
    return files


def subpackage_of(module: str, root: Path) -> str | None:
    """The deepest package (a folder with `__init__.py`) that holds `module`, or None."""
    parts = module.split(".")
    for end in range(len(parts), 0, -1):
        folder = root.joinpath(*parts[:end])
        if (folder / "__init__.py").exists():
            return ".".join(parts[:end])
    return None


def subpackage_graph(root: Path, packages: tuple[str, ...]) -> dict[str, set[str]]:
    """Which subpackage imports which (a module of `a.b` importing `a.c.x` gives a.b -> a.c)."""
    graph: dict[str, set[str]] = defaultdict(set)
    for module, path in module_files(root, packages):
        own = subpackage_of(module, root)
        assert own is not None
        for imported in imports_of(path):
            if imported.split(".")[0] not in packages:
                continue
            target = subpackage_of(imported, root)
            if target is not None and target != own:
                graph[own].add(target)
    return graph


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected set of two or more subpackages (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            members = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                members.append(top)
                if top == node:
                    break
            if len(members) > 1:
                cycles.append(sorted(members))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(cycles)


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


def test_faces_import_only_the_faces_they_stand_on() -> None:
    """Each face imports only the faces FACE_DEPENDS gives it (the Node never the SDK, the
    CLI never the console, the SDK never the Node)."""
    violations = []
    for module, path in module_files():
        own = face_of(module)
        if own is None:
            continue
        for imported in imports_of(path):
            other = face_of(imported)
            if other is not None and other != own and other not in FACE_DEPENDS[own]:
                violations.append(f"{module} imports {imported}")
    assert violations == []


def test_no_import_cycle_between_subpackages() -> None:
    """No two subpackages (maia.cli, actors.session, supervision.leases, ...) reach each other."""
    assert import_cycles(subpackage_graph(ROOT, PACKAGES)) == []


def test_a_planted_cycle_is_caught(tmp_path: Path) -> None:
    """The cycle check fails on two planted subpackages that import each other through a
    deferred import, and names both."""
    for name, body in (
        ("alpha", "from beta import thing\n"),
        ("beta", "def thing() -> None:\n    from alpha import other\n"),
        ("gamma", "import alpha\n"),
    ):
        (tmp_path / name).mkdir()
        (tmp_path / name / "__init__.py").write_text("")
        (tmp_path / name / "_mod.py").write_text(body)
    graph = subpackage_graph(tmp_path, ("alpha", "beta", "gamma"))
    assert import_cycles(graph) == [["alpha", "beta"]]


def test_layer_of_knows_the_faces() -> None:
    """Every face package is classified as a face, the core and protocol as their layers."""
    assert all(layer_of(face) == "faces" for face in FACES)
    assert set(FACE_DEPENDS) == set(FACES)
    assert layer_of("maia.core._ids") == "maia.core"
    assert layer_of("maia.protocol._registry") == "maia.protocol"
    assert layer_of("maia.config") == "maia.protocol"
    assert layer_of("os") is None
