"""The typed frames the Node works with: one frozen attrs class per wire `type`.

Each class mirrors one row of `_schema.FRAMES` (payload fields in wire order, snake_case);
`request_id` is the envelope field the caller may choose (empty: the connection makes one).
The other envelope fields (version, sequence, epoch) belong to the connection. Conversion is
hand-written over the schema table (`frame_from_wire`, `frame_to_wire`): the dict has been
checked already, so a second validation pass through cattrs would only cost time.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import attrs

from ._schema import FRAMES


@attrs.frozen
class Hello:
    type: ClassVar[str] = "hello"
    name: str
    pid: int
    request_id: str = ""


@attrs.frozen
class Initialize:
    type: ClassVar[str] = "initialize"
    attempt_id: str
    heartbeat_ms: int
    activation: dict[str, Any] = attrs.field(factory=dict)
    options: dict[str, str] = attrs.field(factory=dict)
    request_id: str = ""


@attrs.frozen
class Initialized:
    type: ClassVar[str] = "initialized"
    capabilities: list[str] = attrs.field(factory=list)
    request_id: str = ""


@attrs.frozen
class Prompt:
    type: ClassVar[str] = "prompt"
    turn_id: str
    text: str  # empty when `artifact` carries the text (over 16 KiB)
    artifact: dict[str, Any] | None = None
    request_id: str = ""


@attrs.frozen
class Event:
    type: ClassVar[str] = "event"
    turn_id: str
    kind: str
    text: str | None = None
    data: dict[str, Any] | None = None
    request_id: str = ""


@attrs.frozen
class ToolCall:
    type: ClassVar[str] = "tool-call"
    turn_id: str
    call_id: str
    name: str
    arguments: dict[str, Any] = attrs.field(factory=dict)
    request_id: str = ""


@attrs.frozen
class ToolResult:
    type: ClassVar[str] = "tool-result"
    turn_id: str
    call_id: str
    ok: bool
    content: str
    request_id: str = ""


@attrs.frozen
class ObservationBatch:
    type: ClassVar[str] = "observation-batch"
    records: list[dict[str, Any]]
    dropped: int = 0
    request_id: str = ""


@attrs.frozen
class Interrupt:
    type: ClassVar[str] = "interrupt"
    turn_id: str
    request_id: str = ""


@attrs.frozen
class Interrupted:
    type: ClassVar[str] = "interrupted"
    turn_id: str
    request_id: str = ""


@attrs.frozen
class Heartbeat:
    type: ClassVar[str] = "heartbeat"
    request_id: str = ""


@attrs.frozen
class Shutdown:
    type: ClassVar[str] = "shutdown"
    reason: str
    request_id: str = ""


@attrs.frozen
class Terminal:
    type: ClassVar[str] = "terminal"
    reason: str
    request_id: str = ""


@attrs.frozen
class Error:
    type: ClassVar[str] = "error"
    code: str
    message: str
    request_id: str = ""


@attrs.frozen
class Ack:
    type: ClassVar[str] = "ack"
    through: int
    request_id: str = ""


Frame = (
    Hello
    | Initialize
    | Initialized
    | Prompt
    | Event
    | ToolCall
    | ToolResult
    | ObservationBatch
    | Interrupt
    | Interrupted
    | Heartbeat
    | Shutdown
    | Terminal
    | Error
    | Ack
)

FRAME_CLASSES: Mapping[str, type[Frame]] = {
    cls.type: cls
    for cls in (
        Hello,
        Initialize,
        Initialized,
        Prompt,
        Event,
        ToolCall,
        ToolResult,
        ObservationBatch,
        Interrupt,
        Interrupted,
        Heartbeat,
        Shutdown,
        Terminal,
        Error,
        Ack,
    )
}


def frame_from_wire(wire: Mapping[str, Any]) -> Frame:
    """The typed frame of an already checked wire dict (see `WireConnection.next_frame`)."""
    spec = FRAMES[wire["type"]]
    values = {field.attr: wire[field.wire] for field in spec.fields if field.wire in wire}
    return FRAME_CLASSES[spec.type](request_id=wire["requestId"], **values)


def frame_to_wire(frame: Frame) -> dict[str, Any]:
    """The wire dict of `frame` (type, payload and `requestId` if chosen); None is omitted."""
    wire: dict[str, Any] = {"type": frame.type}
    if frame.request_id:
        wire["requestId"] = frame.request_id
    for field in FRAMES[frame.type].fields:
        value = getattr(frame, field.attr)
        if value is not None:
            wire[field.wire] = value
    return wire
