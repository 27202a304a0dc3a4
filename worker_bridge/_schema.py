"""The wire schema of every frame: one table, checked on both sides, stdlib only.

Each frame is a JSON object: the envelope (`type`, `protocolVersion`, `workerVersion`,
`requestId`, `sequence`, `epoch`) plus the payload fields of its type. Unknown fields are
refused, every string and list is bounded, and free-form JSON values are depth-bounded.
The typed attrs classes in `_frames` mirror this table (a test holds them together); the
worker SDK works on checked dicts so a worker starts without importing attrs.
"""

from __future__ import annotations

from ._artifacts import check_reference
from ._json import check_depth
from ._limits import (
    MAX_BATCH_RECORDS,
    MAX_CONTENT_BYTES,
    MAX_ID_CHARS,
    MAX_LIST_ITEMS,
    MAX_NAME_CHARS,
    MAX_TOOL_RESULT_BYTES,
)

# typing costs a worker ~20 ms of start-up: import it for the type checker only.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any, Final


WORKER: Final = "worker"
NODE: Final = "node"

ENVELOPE: Final = ("type", "protocolVersion", "workerVersion", "requestId", "sequence", "epoch")

# Event kinds a worker may report; the last two end a turn. The agent adapters add
# structured items (`item.*`, `data.item`) and the harness's conversation id.
EVENT_KINDS: Final = frozenset(
    {
        "turn.started",
        "message.delta",
        "message.completed",
        "item.started",
        "item.delta",
        "item.completed",
        "conversation",
        "turn.completed",
        "turn.failed",
    }
)
TURN_END_KINDS: Final = frozenset({"turn.completed", "turn.failed"})


def _check_str(limit: int, *, chars: bool) -> Callable[[Any], str | None]:
    def check(value: Any) -> str | None:
        if not isinstance(value, str):
            return "must be a string"
        # n characters encode to at most 4n bytes: skip the encode when that already fits.
        size = len(value) if chars or len(value) * 4 <= limit else len(value.encode("utf-8"))
        if size > limit:
            return f"exceeds {limit} {'characters' if chars else 'bytes'}"
        return None

    return check


def _check_id(value: Any) -> str | None:
    if not isinstance(value, str) or not value:
        return "must be a non-empty string"
    if len(value) > MAX_ID_CHARS:
        return f"exceeds {MAX_ID_CHARS} characters"
    return None


def _check_count(value: Any) -> str | None:
    if type(value) is not int or value < 0:
        return "must be a non-negative integer"
    return None


def _check_bool(value: Any) -> str | None:
    return None if isinstance(value, bool) else "must be true or false"


def _check_object(value: Any) -> str | None:
    if not isinstance(value, dict):
        return "must be an object"
    return None if check_depth(value) else "nests too deeply"


def _check_names(value: Any) -> str | None:
    if not isinstance(value, list) or len(value) > MAX_LIST_ITEMS:
        return f"must be a list of at most {MAX_LIST_ITEMS} strings"
    if not all(isinstance(v, str) and 0 < len(v) <= MAX_NAME_CHARS for v in value):
        return f"must hold strings of 1..{MAX_NAME_CHARS} characters"
    return None


def _check_options(value: Any) -> str | None:
    if not isinstance(value, dict) or len(value) > MAX_LIST_ITEMS:
        return f"must be an object of at most {MAX_LIST_ITEMS} string values"
    for key, item in value.items():
        if len(key) > MAX_NAME_CHARS or not isinstance(item, str) or len(item) > 4096:
            return f"entry {key[:40]!r} must be a string of at most 4096 characters"
    return None


def _check_records(value: Any) -> str | None:
    if not isinstance(value, list) or len(value) > MAX_BATCH_RECORDS:
        return f"must be a list of at most {MAX_BATCH_RECORDS} records"
    if not all(isinstance(r, dict) for r in value) or not check_depth(value):
        return "must hold objects that do not nest too deeply"
    return None


def _check_kind(value: Any) -> str | None:
    return None if value in EVENT_KINDS else f"must be one of {sorted(EVENT_KINDS)}"


_NAME = _check_str(MAX_NAME_CHARS, chars=True)
_CONTENT = _check_str(MAX_CONTENT_BYTES, chars=False)
_RESULT = _check_str(MAX_TOOL_RESULT_BYTES, chars=False)


class Field:
    """One payload field: wire name, Python attribute name, check, and whether required."""

    __slots__ = ("attr", "check", "required", "wire")

    def __init__(
        self, wire: str, attr: str, check: Callable[[Any], str | None], required: bool = True
    ) -> None:
        self.wire = wire
        self.attr = attr
        self.check = check
        self.required = required


class FrameSpec:
    """One frame type: who may send it and its payload fields."""

    __slots__ = ("fields", "names", "senders", "type")

    def __init__(self, type_: str, senders: frozenset[str], *fields: Field) -> None:
        self.type = type_
        self.senders = senders
        self.fields = fields
        self.names = frozenset(ENVELOPE) | {f.wire for f in fields}


_W = frozenset({WORKER})
_N = frozenset({NODE})
_BOTH = frozenset({WORKER, NODE})

FRAMES: Mapping[str, FrameSpec] = {
    spec.type: spec
    for spec in (
        FrameSpec("hello", _W, Field("name", "name", _NAME), Field("pid", "pid", _check_count)),
        FrameSpec(
            "initialize",
            _N,
            Field("attemptId", "attempt_id", _check_id),
            Field("heartbeatMs", "heartbeat_ms", _check_count),
            Field("activation", "activation", _check_object),
            Field("options", "options", _check_options),
        ),
        FrameSpec("initialized", _W, Field("capabilities", "capabilities", _check_names)),
        FrameSpec(
            "prompt",
            _N,
            Field("turnId", "turn_id", _check_id),
            Field("text", "text", _CONTENT),
            Field("artifact", "artifact", check_reference, required=False),  # a larger text
        ),
        FrameSpec(
            "event",
            _W,
            Field("turnId", "turn_id", _check_id),
            Field("kind", "kind", _check_kind),
            Field("text", "text", _CONTENT, required=False),
            Field("data", "data", _check_object, required=False),
        ),
        FrameSpec(
            "tool-call",
            _W,
            Field("turnId", "turn_id", _check_id),
            Field("callId", "call_id", _check_id),
            Field("name", "name", _NAME),
            Field("arguments", "arguments", _check_object),
        ),
        FrameSpec(
            "tool-result",
            _N,
            Field("turnId", "turn_id", _check_id),
            Field("callId", "call_id", _check_id),
            Field("ok", "ok", _check_bool),
            Field("content", "content", _RESULT),
        ),
        FrameSpec(
            "observation-batch",
            _W,
            Field("records", "records", _check_records),
            Field("dropped", "dropped", _check_count),
        ),
        FrameSpec("interrupt", _N, Field("turnId", "turn_id", _check_id)),
        FrameSpec("interrupted", _W, Field("turnId", "turn_id", _check_id)),
        FrameSpec("heartbeat", _W),
        FrameSpec("shutdown", _N, Field("reason", "reason", _NAME)),
        FrameSpec("terminal", _W, Field("reason", "reason", _NAME)),
        FrameSpec(
            "error", _BOTH, Field("code", "code", _NAME), Field("message", "message", _CONTENT)
        ),
        FrameSpec("ack", _BOTH, Field("through", "through", _check_count)),
    )
}


def check_payload(frame: Mapping[str, Any]) -> str | None:
    """The first problem with `frame`'s type and payload fields as `field: reason`, or None.

    The envelope's values are the connection's to check (it knows the epoch and sequence).
    """
    spec = FRAMES.get(frame.get("type"))  # type: ignore[arg-type]
    if spec is None:
        return f"type: {str(frame.get('type'))[:40]!r} is not a frame type"
    for key in frame:
        if key not in spec.names:
            return f"{str(key)[:40]}: unknown field"
    for field in spec.fields:
        if field.wire in frame:
            problem = field.check(frame[field.wire])
            if problem is not None:
                return f"{field.wire}: {problem}"
        elif field.required:
            return f"{field.wire}: required"
    return None
