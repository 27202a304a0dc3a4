"""The one door for untrusted JSON.

`json.loads` accepts duplicate keys, `NaN` and `Infinity`, guesses UTF-16 from bytes and
raises `RecursionError` on deep nesting. Every frame a peer sends goes through
`parse_untrusted`, which bounds size, decodes strict UTF-8, refuses those extensions and
maps every failure to a `RemoteProtocolError`. Depth of nested values is bounded by
`check_depth`, which the schema applies to free-form fields only (the envelope is flat).
Stdlib only: workers import this and must start fast.
"""

from __future__ import annotations

import json

from ._errors import RemoteProtocolError
from ._limits import MAX_FRAME_BYTES, MAX_JSON_DEPTH

# typing costs a worker ~20 ms of start-up: import it for the type checker only.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)
    if len(result) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise ValueError(f"duplicate key {key!r}")
            seen.add(key)
    return result


# Public as STRICT_DECODER: the Node's API and observation sockets parse their untrusted
# frames with the same refusals (they map the ValueError to their own typed errors).
STRICT_DECODER = json.JSONDecoder(object_pairs_hook=_pairs, parse_constant=_refuse_constant)
_DECODER = STRICT_DECODER
_ENCODER = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def parse_untrusted(data: bytes, *, max_bytes: int = MAX_FRAME_BYTES) -> Any:
    """Parse one JSON document from a peer.

    Raises `RemoteProtocolError` for: more than `max_bytes`, invalid UTF-8, invalid JSON,
    duplicate keys, NaN/Infinity, nesting deep enough to exhaust the parser.
    """
    if len(data) > max_bytes:
        raise RemoteProtocolError(f"a frame of {len(data)} bytes exceeds {max_bytes} bytes")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RemoteProtocolError(f"a frame is not valid UTF-8 (byte {exc.start})") from None
    try:
        value, end = _DECODER.raw_decode(text)
    except RecursionError:
        raise RemoteProtocolError("a frame nests too deeply to parse") from None
    except ValueError as exc:  # JSONDecodeError, and our hooks' refusals
        raise RemoteProtocolError(f"a frame is not valid JSON: {exc}") from None
    if text[end:].strip(" \t\r"):
        raise RemoteProtocolError("a frame has bytes after its JSON value")
    return value


def check_depth(value: Any, *, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether `value` nests at most `limit` containers deep (iterative: no recursion)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            return False
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return True


# One JSON string literal, as `encode` writes it (non-ASCII kept, controls escaped).
encode_string: Callable[[str], str] = json.encoder.encode_basestring


def encode(value: Any) -> bytes:
    """Compact UTF-8 JSON; raises `ValueError` on NaN/Infinity and `TypeError` on non-JSON."""
    return _ENCODER.encode(value).encode("utf-8")
