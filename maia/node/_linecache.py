"""Keeps attrs' generated source out of `linecache` in a process that runs a Node.

attrs writes each class's methods (`__init__`, `__eq__`, `__repr__`, ...) as source, compiles
it, and files the source in `linecache` under `<attrs generated ...>` so that a debugger can
show it. The Node defines some 2,000 such classes; their source, kept as lines for the
life of the process, is ~2 MiB of the idle Node's ~47 MiB, and nothing in a running Node
reads it. `keep_attrs_source_out()` replaces `linecache.cache` with a dict that refuses
those entries (everything else is filed as before): a traceback through a generated method
still names its file and line, without the line's text. It runs as `maia.node`'s first step,
before the Node's classes exist, and drops the entries already filed. Idempotent.
"""

from __future__ import annotations

import linecache
from typing import Any

ATTRS_PREFIX = "<attrs generated "


class _WithoutAttrsSource(dict[str, Any]):
    """`linecache.cache` less attrs' generated scripts (attrs files them with `setdefault`
    and goes on when it gets its own entry back, so returning it unfiled is enough)."""

    def setdefault(self, key: str, default: Any = None, /) -> Any:
        if key.startswith(ATTRS_PREFIX):
            return default
        return super().setdefault(key, default)

    def __setitem__(self, key: str, value: Any, /) -> None:
        if not key.startswith(ATTRS_PREFIX):
            super().__setitem__(key, value)


def keep_attrs_source_out() -> None:
    """Refuse attrs' generated source in `linecache` from now on, and drop what it holds."""
    if isinstance(linecache.cache, _WithoutAttrsSource):
        return
    kept = {k: v for k, v in linecache.cache.items() if not k.startswith(ATTRS_PREFIX)}
    linecache.cache = _WithoutAttrsSource(kept)
