"""Refusing decoded JSON that no encoder can send back: lone UTF-16 surrogates.

JSON may spell `"\\ud800"`, and Python's decoder turns it into a one-character string
holding a lone surrogate. Such a string cannot be encoded as UTF-8: orjson refuses it, SQLite
refuses it, so an error frame naming a bad key, a reply echoing a request id, or a row
holding a title would each fail *after* the request was accepted. Both sockets therefore
refuse such text while decoding, as `validation_failed` naming where it sits, before
anything is done with it. A valid surrogate *pair* decodes to one ordinary character and
passes.

A repeated key is refused by the strict decoder without saying where; `repeated_key` decodes
the text once more, marking each object that repeats a key, to name its path.
"""

from __future__ import annotations

import json
import re
from typing import Any

import attrs

from maia.core import MaiaError

# Only an escape can make a surrogate: wsproto hands us text decoded from strict UTF-8.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89abcdefABCDEF]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def lone_surrogate_path(value: Any, root: str = "") -> str | None:
    """The path of the first key or string in `value` holding a lone surrogate, or None."""
    stack: list[tuple[Any, str]] = [(value, root)]
    while stack:
        item, path = stack.pop()
        if isinstance(item, str):
            if _SURROGATE.search(item):
                return path or "root"
        elif isinstance(item, dict):
            for key, child in item.items():
                child_path = f"{path}.{key}" if path else key
                if _SURROGATE.search(key):
                    return f"{path}.<key>" if path else "<key>"
                stack.append((child, child_path))
        elif isinstance(item, list):
            stack.extend((child, f"{path}[{index}]") for index, child in enumerate(item))
    return None


def refuse_lone_surrogates(text: str, value: Any, request_id: Any = None) -> None:
    """Raise `MaiaError(validation_failed)` naming the path when the frame `text`, decoded
    to `value`, holds a lone surrogate anywhere. The details carry `request_id` (an id the
    caller has checked) unless it is itself the bad string."""
    if _SURROGATE_ESCAPE.search(text) is None:
        return  # the common case costs one scan of the raw text
    path = lone_surrogate_path(value)
    if path is None:
        return
    if lone_surrogate_path(request_id) is not None:
        request_id = None
    raise MaiaError(
        "validation_failed",
        f"{path}: must be valid Unicode text (a lone UTF-16 surrogate escape is not)",
        {"path": path, "id": request_id},
    )


@attrs.frozen
class _Repeated:
    """Where an object repeated `key`: the marking decoder's value for that object."""

    key: str


def _marking(pairs: list[tuple[str, Any]]) -> Any:
    seen: set[str] = set()
    for key, _ in pairs:
        if key in seen:
            return _Repeated(key)
        seen.add(key)
    return dict(pairs)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


_MARKING = json.JSONDecoder(object_pairs_hook=_marking, parse_constant=_no_constant)


def _repeated_path(value: Any, path: str = "") -> str | None:
    """The path (`params.position.kind`, `params.x[0].k`) of the first repeated key; a key
    holding a lone surrogate is named `<key>` (no frame can carry it)."""
    if isinstance(value, _Repeated):
        named = _named(value.key)
        return f"{path}.{named}" if path else named
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(
        value, list) else ()  # fmt: skip
    for key, item in items:
        inner = f"{path}[{key}]" if isinstance(key, int) else (
            f"{path}.{_named(key)}" if path else _named(key))  # fmt: skip
        found = _repeated_path(item, inner)
        if found is not None:
            return found
    return None


def repeated_key(text: str) -> tuple[str, Any] | None:
    """(path of the first repeated key, the envelope's `id` or None) when a repeated key
    is what the strict decoder refused `text` for; None when the text has another fault."""
    try:
        value = _MARKING.decode(text)
    except (ValueError, RecursionError):
        return None
    path = _repeated_path(value)
    if path is None:
        return None
    request_id = value.get("id") if isinstance(value, dict) else None
    return path, request_id if _envelope_id(request_id) else None


def _envelope_id(value: Any) -> bool:
    """Whether `value` is an id the envelope admits (a string of 1-128 characters, an
    integer 0 to 2^53 - 1); only such an id is echoed. A lone surrogate is left out as
    `refuse_lone_surrogates` leaves it out (no frame can carry it)."""
    if isinstance(value, str):
        return 0 < len(value) <= 128 and _SURROGATE.search(value) is None
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 2**53 - 1


def _named(key: str) -> str:
    return "<key>" if _SURROGATE.search(key) else key
