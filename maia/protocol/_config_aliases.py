"""Deprecated configuration keys (`config-key` deprecations) applied to a parsed document.

Pure: `maia.config` calls it before checking a file and logs what it returns.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ._versioning import Deprecation


def apply_config_aliases(
    document: Any, deprecations: Iterable[Deprecation]
) -> tuple[Any, list[dict[str, Any]]]:
    """A parsed configuration document with its deprecated keys (`config-key` entries,
    dotted paths such as `swarm.capacity.maxFoo`) moved to their replacement, and the
    diagnostics of those it met. A removed key (no replacement) is dropped; a key whose
    replacement is also present is left for the checker to refuse as unknown. The document
    is copied where it changes, never modified."""
    found: list[dict[str, Any]] = []
    for entry in deprecations:
        if entry.kind != "config-key" or not isinstance(document, dict):
            continue
        old = entry.name.split(".")
        parent = _container(document, old[:-1])
        if parent is None or old[-1] not in parent:
            continue
        new = entry.replacement.split(".") if entry.replacement else None
        if new is not None and _container(document, new[:-1], probe=new[-1]) is not None:
            continue  # both spelled: the checker names the old one
        document = _copy_path(document, old[:-1])
        value = _container(document, old[:-1]).pop(old[-1])  # type: ignore[union-attr]
        if new is not None:
            document = _copy_path(document, new[:-1], create=True)
            target = _container(document, new[:-1])
            assert target is not None
            target[new[-1]] = value
        found.append(entry.diagnostic())
    return document, found


def _container(
    document: dict[str, Any], path: list[str], probe: str | None = None
) -> dict[str, Any] | None:
    node: Any = document
    for key in path:
        node = node.get(key) if isinstance(node, dict) else None
    if not isinstance(node, dict) or (probe is not None and probe not in node):
        return None
    return node


def _copy_path(document: dict[str, Any], path: list[str], create: bool = False) -> dict[str, Any]:
    """`document` with the dicts along `path` copied (created if `create`)."""
    root = dict(document)
    node = root
    for key in path:
        child = node.get(key)
        if not isinstance(child, dict):
            if not create:
                return root
            child = {}
        node[key] = dict(child)
        node = node[key]
    return root
