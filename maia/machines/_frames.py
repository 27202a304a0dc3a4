"""The machine link's frames: one JSON object per WebSocket text message, tagged by `type`.

Every frame from a peer is untrusted: bounded (`MAX_FRAME_BYTES`), parsed by the one strict
decoder (duplicate keys, NaN and Infinity refused; nesting bounded), then checked against its
shape on `maia.core`'s schema system (unknown fields refused). Any failure is a `MaiaError`
(`frame_too_large`, `invalid_request`, `validation_failed`) naming what was wrong; the
caller answers it with an `error` frame and the link stays up.

Execution Node -> Control: `enroll` (on /machines/v1/enroll), `hello`, `status`,
`lease_request`. Control -> Execution Node: `enrolled`, `welcome`, `grant`, `refused`,
`error`, `fence`.
"""

# ruff: noqa: RUF009  (field() returns attrs.field: a field definition, not a shared default)

from __future__ import annotations

from typing import Any, Final, Literal

import attrs
import orjson

from actors.machine import RELAY_TO_CONTROL, RELAY_TO_EXECUTION
from actors.machine import GrantFrame as GrantFrame
from actors.machine import RefusedFrame as RefusedFrame
from maia.core import MaiaError, check, field, id_field, to_json
from maia.observe import refuse_lone_surrogates
from supervision.leases import MachineLeaseRequest, NodeStatus
from worker_bridge import STRICT_DECODER

MAX_FRAME_BYTES: Final = 64 * 1024
MAX_DEPTH: Final = 32


def _secret(doc: str) -> Any:
    return field(doc=doc, min_length=1, max_length=256)


@attrs.frozen
class EnrollFrame:
    """Present the one-time token once; the answer is `enrolled` with the credential."""

    type: Literal["enroll"] = field(doc="enroll.")
    token: str = _secret("The one-time enrollment token.")
    node_id: str = id_field("The Execution Node's own nodeId.")


@attrs.frozen
class EnrolledFrame:
    type: Literal["enrolled"] = field(doc="enrolled.")
    machine_id: str = id_field("The machine.")
    name: str = field(doc="Its name on the Control Node.", max_length=64)
    credential: str = _secret("The machine credential (store it 0600).")
    incarnation: int = field(doc="The registration incarnation.", minimum=1)
    credential_revision: int = field(doc="Control's revocation revision at issue.", minimum=0)
    control_node_id: str = id_field("The Control Node.")


@attrs.frozen
class HelloFrame:
    """The first frame of every link: what the Execution Node holds."""

    type: Literal["hello"] = field(doc="hello.")
    incarnation: int = field(doc="The registration incarnation held.", minimum=1)
    credential_revision: int = field(doc="The revision the credential was issued at.", minimum=0)
    observed_revocation_revision: int = field(doc="The highest revision seen.", minimum=0)
    node_id: str = id_field("The Execution Node's own nodeId.")
    attempts: tuple[str, ...] = field(doc="The worker attempts it runs now (the rest ended).",
                                      factory=tuple, max_items=256)  # fmt: skip


@attrs.frozen
class WelcomeFrame:
    type: Literal["welcome"] = field(doc="welcome.")
    machine_id: str = id_field("The machine authenticated.")
    control_node_id: str = id_field("The Control Node.")
    control_epoch: int = field(doc="The Control Node's epoch (a restart moves it on).", minimum=0)
    heartbeat_ms: int = field(doc="How often to send a status.", minimum=1)


@attrs.frozen
class StatusFrame:
    type: Literal["status"] = field(doc="status.")
    status: NodeStatus = field(doc="The heartbeat and a report per assignment.")


@attrs.frozen
class LeaseRequestFrame:
    type: Literal["lease_request"] = field(doc="lease_request.")
    request: MachineLeaseRequest = field(doc="The request, with its never-reused requestId.")


@attrs.frozen
class ErrorFrame:
    type: Literal["error"] = field(doc="error.")
    code: str = field(doc="The error code.", max_length=64)
    message: str = field(doc="For people.", max_length=1024)
    reason: str | None = field(doc="details.reason, when it has one.", default=None,
                               max_length=64)  # fmt: skip


@attrs.frozen
class FenceFrame:
    type: Literal["fence"] = field(doc="fence.")
    reason: str = field(doc="Why the link is fenced.", max_length=64)


TO_CONTROL: Final[dict[str, type]] = {
    "enroll": EnrollFrame, "hello": HelloFrame, "status": StatusFrame,
    "lease_request": LeaseRequestFrame, **RELAY_TO_CONTROL,
}  # fmt: skip
TO_EXECUTION: Final[dict[str, type]] = {
    "enrolled": EnrolledFrame, "welcome": WelcomeFrame, "error": ErrorFrame,
    "fence": FenceFrame, **RELAY_TO_EXECUTION,
}  # fmt: skip


def _invalid(detail: str) -> MaiaError:
    return MaiaError("invalid_request", f"the request is malformed: {detail}", {"id": None})


def _depth_ok(text: str) -> bool:
    depth = 0
    for char in text:  # brackets inside strings only over-count: a stricter bound
        if char in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                return False
        elif char in "]}":
            depth -= 1
    return True


def decode_frame(frame: str | bytes, shapes: dict[str, type]) -> Any:
    """The checked frame, one of `shapes` by its `type`. Raises `frame_too_large`,
    `invalid_request` or `validation_failed` (naming the field's path)."""
    if len(frame) > MAX_FRAME_BYTES:
        raise MaiaError("frame_too_large", f"a frame exceeds {MAX_FRAME_BYTES} bytes",
                        {"limit": MAX_FRAME_BYTES})  # fmt: skip
    if isinstance(frame, bytes):
        raise _invalid("machine frames are text")
    if not _depth_ok(frame):
        raise _invalid(f"JSON nests deeper than {MAX_DEPTH} levels")
    try:
        value = STRICT_DECODER.decode(frame)
    except (ValueError, RecursionError) as error:
        raise _invalid(f"invalid JSON: {error}") from None
    if not isinstance(value, dict):
        raise _invalid("a frame is a JSON object with a type")
    kind = value.get("type")
    shape = shapes.get(kind) if isinstance(kind, str) else None
    if shape is None:
        raise MaiaError("validation_failed", f"frame.type: must be one of {sorted(shapes)}",
                        {"path": "frame.type"})  # fmt: skip
    refuse_lone_surrogates(frame, value)
    return check(shape, value, root="frame")


def encode_frame(frame: object) -> str:
    """The frame as JSON text (our own frames are always within the bound)."""
    return orjson.dumps(to_json(frame)).decode()


def error_frame(error: MaiaError) -> ErrorFrame:
    reason = error.details.get("reason") if isinstance(error.details, dict) else None
    return ErrorFrame("error", error.code, error.message[:1024],
                      reason if isinstance(reason, str) else None)  # fmt: skip
