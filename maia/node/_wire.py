"""The API envelope: parsing a request frame and encoding a response frame.

A request is `{id, method, params}`; a response is `{id, ok: true, result}` or
`{id, ok: false, error: {code, message, retryable, details}}`. Every failure to read a frame
becomes a `MaiaError` here, so the server never sees a raw parser exception.

Untrusted text is parsed by the standard library with hooks (duplicate keys, `NaN` and
`Infinity` refused; deep nesting bounded, since `json` would raise `RecursionError`), and
text no encoder could send back (a lone surrogate escape) is refused as `validation_failed`
naming its path; responses are written by orjson, which measured faster on the hot path.
A text that orjson writes back byte for byte (what the SDK sends) is read by orjson
(~1 us; the strict parse ~4 us): its value is then the strict parse's.
"""

from __future__ import annotations

import re
from typing import Any

import attrs
import orjson

from maia.core import MaiaError
from maia.observe import refuse_lone_surrogates, repeated_key
from worker_bridge import STRICT_DECODER

MAX_FRAME_BYTES = 1024 * 1024
MAX_DEPTH = 64
_ENVELOPE_KEYS = frozenset({"id", "method", "params"})
_METHOD = re.compile(r"^[A-Za-z0-9._-]{1,128}$")
_MAX_ID_LENGTH = 128
_MAX_SAFE = 2**53 - 1

RequestId = str | int | None


@attrs.frozen
class Request:
    """One parsed request envelope (params not yet checked against the op's schema)."""

    id: str | int
    method: str
    params: dict[str, Any]


_DECODER = STRICT_DECODER


def _depth_ok(text: str) -> bool:
    # A cheap upper bound on nesting before handing the text to a recursive parser.
    depth = deepest = 0
    if text.count("[") + text.count("{") <= MAX_DEPTH:
        return True
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
            if deepest > MAX_DEPTH:
                return False
        elif char in "]}":
            depth -= 1
    return True


_NOT_PLAIN: Any = object()


def _as_orjson_writes_it(frame: str) -> Any:
    """The value of `frame` when orjson writes that very text back (the SDK's own form:
    compact, no duplicate key, no NaN, no number read another way, no lone surrogate), the
    strict parse's value then (`supervision._worker_json.decode_frame`'s argument; both
    are tested against the strict parse over texts of every spelling); else `_NOT_PLAIN`,
    and the strict parse decides."""
    try:
        value = orjson.loads(frame)
        if orjson.dumps(value) == frame.encode():
            return value
    except (orjson.JSONDecodeError, orjson.JSONEncodeError, UnicodeEncodeError):
        pass
    return _NOT_PLAIN


def _invalid(detail: str, request_id: RequestId = None, path: str | None = None) -> MaiaError:
    """`path`: the envelope field at fault ("id", "method", an unknown key), when one is."""
    details: dict[str, Any] = {"id": request_id}
    if path is not None:
        details["path"] = path
    return MaiaError("invalid_request", f"the request is malformed: {detail}", details)


def _duplicate(frame: str) -> MaiaError | None:
    """The refusal of a frame whose only fault is a repeated key, naming where (`path`) and
    the request's id when the envelope's own keys are whole; else None."""
    found = repeated_key(frame)
    if found is None:
        return None
    path, request_id = found
    return _invalid(f"duplicate key {path}", request_id, path)


def parse_request(frame: str | bytes) -> Request:
    """Parse one request frame.

    Raises `MaiaError(frame_too_large)` over `MAX_FRAME_BYTES`, `MaiaError(invalid_request)`
    for anything that is not a well-formed envelope (details carry the id when one was read).
    """
    if len(frame) > MAX_FRAME_BYTES:
        raise MaiaError(
            "frame_too_large",
            f"a frame exceeds {MAX_FRAME_BYTES} bytes",
            {"limit": MAX_FRAME_BYTES},
        )
    if isinstance(frame, bytes):
        try:
            frame = frame.decode("utf-8")
        except UnicodeDecodeError:
            raise _invalid("the frame is not UTF-8") from None
    if not _depth_ok(frame):
        raise _invalid(f"JSON nests deeper than {MAX_DEPTH} levels")
    value = _as_orjson_writes_it(frame)
    strict = value is _NOT_PLAIN
    if strict:
        try:
            value = _DECODER.decode(frame)
        except (ValueError, RecursionError) as error:
            raise _duplicate(frame) or _invalid(f"invalid JSON: {error}") from None
    if not isinstance(value, dict):
        raise _invalid("the frame must be a JSON object {id, method, params}")
    request_id = value.get("id")
    if isinstance(request_id, bool) or not (
        (isinstance(request_id, str) and 0 < len(request_id) <= _MAX_ID_LENGTH)
        or (isinstance(request_id, int) and 0 <= request_id <= _MAX_SAFE)
    ):
        raise _invalid(
            "id must be a string of 1-128 characters or a non-negative integer", path="id"
        )
    if strict:  # orjson writes no lone surrogate back: a plain text holds none
        refuse_lone_surrogates(frame, value, request_id)
    if not value.keys() <= _ENVELOPE_KEYS:
        unknown = sorted(set(value) - _ENVELOPE_KEYS)
        raise _invalid(f"unknown envelope field {unknown[0]!r}", request_id, unknown[0])
    method = value.get("method")
    if not isinstance(method, str) or not _METHOD.fullmatch(method):
        raise _invalid("method must be an operation ID such as node.status", request_id, "method")
    params = value.get("params", {})
    if not isinstance(params, dict):
        raise MaiaError(
            "validation_failed", "params: must be an object", {"path": "params", "id": request_id}
        )
    return Request(id=request_id, method=method, params=params)


def encode_result(
    request_id: RequestId, result: Any, deprecation: dict[str, Any] | None = None
) -> str:
    """A success frame; a deprecated method's answer carries `deprecations: [diagnostic]`.
    Raises `TypeError` when `result` is not JSON-safe (our bug)."""
    body: dict[str, Any] = {"id": request_id, "ok": True, "result": result}
    if deprecation is not None:
        body["deprecations"] = [deprecation]
    return orjson.dumps(body).decode()


def encode_error(request_id: RequestId, error: MaiaError) -> str:
    """A failure frame; never raises, whatever the error's details hold."""
    try:
        return orjson.dumps({"id": request_id, "ok": False, "error": error.to_wire()}).decode()
    except TypeError:
        # Details orjson cannot write (a lone surrogate, an integer past 64 bits) must not
        # turn one bad answer into a failed connection: send the code and a plain message.
        wire = {"code": error.code, "message": _printable(error.message),
                "retryable": error.retryable, "details": {}}  # fmt: skip
        return orjson.dumps({"id": _printable_id(request_id), "ok": False, "error": wire}).decode()


def _printable(text: str) -> str:
    return text.encode("utf-8", "replace").decode("utf-8")


def _printable_id(request_id: RequestId) -> RequestId:
    if isinstance(request_id, str):
        return _printable(request_id)
    return request_id if isinstance(request_id, int) and 0 <= request_id <= _MAX_SAFE else None
