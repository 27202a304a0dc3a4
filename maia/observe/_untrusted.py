"""Refusing decoded JSON that no encoder can send back: lone UTF-16 surrogates.

JSON may spell `"\\ud800"`, and Python's decoder turns it into a one-character string
holding a lone surrogate. Such a string cannot be encoded as UTF-8: orjson refuses it, SQLite
refuses it, so an error frame naming a bad key, a reply echoing a request id, or a row
holding a title would each fail *after* the request was accepted. Both sockets therefore
refuse such text while decoding, as `validation_failed` naming where it sits, before
anything is done with it. A valid surrogate *pair* decodes to one ordinary character and
passes.
"""

from __future__ import annotations

import re
from typing import Any

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
