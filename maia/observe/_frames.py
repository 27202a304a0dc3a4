"""Frames of the observation socket and the bounds every frame keeps.

Every server message is the API envelope of the subscription's request: `{id, ok: true,
result: {frame: {...}}}` for a stream frame, `{id, ok: false, error}` for the terminal error.
A frame holds at most `MAX_FRAME_RECORDS` records and, whenever more than one record is in
it, at most `MAX_FRAME_BYTES` of encoded records (a single larger record travels alone).
Record batches are assembled from cached encodings without re-encoding them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Final, TypeVar

import orjson

from maia.core import MaiaError

MAX_FRAME_RECORDS: Final = 64
MAX_FRAME_BYTES: Final = 256 * 1024
T = TypeVar("T")


def frame(request_id: Any, body: dict[str, Any]) -> str:
    """One stream frame in the envelope."""
    return orjson.dumps({"id": request_id, "ok": True, "result": {"frame": body}}).decode()


def result_frame(request_id: Any, result: dict[str, Any]) -> str:
    """A plain result (the hello's answer) in the envelope."""
    return orjson.dumps({"id": request_id, "ok": True, "result": result}).decode()


def error_frame(request_id: Any, error: MaiaError) -> str:
    """The terminal error in the envelope; never raises, whatever the error holds."""
    try:
        return orjson.dumps({"id": request_id, "ok": False, "error": error.to_wire()}).decode()
    except TypeError:
        # What orjson cannot write (a lone surrogate, an integer past 64 bits, a key that is
        # not a string) must not turn the answer into a closed connection: the code and a
        # plain message, the id only when it is one the envelope admits.
        wire = {"code": error.code, "message": _printable(error.message),
                "retryable": error.retryable, "details": {}}  # fmt: skip
        return orjson.dumps({"id": _printable_id(request_id), "ok": False,
                             "error": wire}).decode()  # fmt: skip


def _printable(text: str) -> str:
    return text.encode("utf-8", "replace").decode("utf-8")


def _printable_id(request_id: Any) -> Any:
    if isinstance(request_id, str) and 0 < len(request_id) <= 128:
        return _printable(request_id)
    if isinstance(request_id, int) and not isinstance(request_id, bool):
        return request_id if 0 <= request_id <= 2**53 - 1 else None
    return None


def records_frame(request_id: Any, head: dict[str, Any], key: str, records: Sequence[bytes],
                  tail: dict[str, Any]) -> str:  # fmt: skip
    """A frame whose `key` holds pre-encoded records: `{**head, key: [records], **tail}`."""
    body = orjson.dumps(head)[:-1]  # drop the closing brace
    sep = b"," if len(body) > 1 else b""
    rest = orjson.dumps(tail)[1:]  # drop the opening brace
    joiner = b"," if len(rest) > 1 else b""
    inner = body + sep + b'"' + key.encode() + b'":[' + b",".join(records) + b"]" + joiner + rest
    return (
        b'{"id":' + orjson.dumps(request_id) + b',"ok":true,"result":{"frame":' + inner + b"}}"
    ).decode()


def pack(items: Sequence[T], encode: Callable[[T], bytes]) -> tuple[list[bytes], int]:
    """Encode a prefix of `items` that fits one frame; returns the encodings and how many
    items they cover (at least one when `items` is not empty)."""
    out: list[bytes] = []
    size = 0
    for item in items[:MAX_FRAME_RECORDS]:
        encoded = encode(item)
        if out and size + len(encoded) + 1 > MAX_FRAME_BYTES:
            break
        out.append(encoded)
        size += len(encoded) + 1
    return out, len(out)
