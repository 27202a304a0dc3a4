"""The closed set of Maia error codes.

Every failure that crosses a boundary (the Node API, the CLI, the SDK) is a `MaiaError`
carrying one of these codes. Each code has an HTTP-like status, a retryable flag and a
message shape; the set is closed so clients can switch on it. A new code is named in `Code`
and described in `_CODES`, here and nowhere else (a test checks the two agree).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any

import attrs


class Code(enum.StrEnum):
    """The names of the closed error set, for code that switches on them (a `str` too)."""

    INVALID_REQUEST = "invalid_request"
    VALIDATION_FAILED = "validation_failed"
    UNKNOWN_METHOD = "unknown_method"
    PROTOCOL_INCOMPATIBLE = "protocol_incompatible"
    FRAME_TOO_LARGE = "frame_too_large"
    HELLO_REQUIRED = "hello_required"
    COMMAND_NOT_IMPLEMENTED = "command_not_implemented"
    CONFIGURATION_INVALID = "configuration_invalid"
    UNAUTHENTICATED = "unauthenticated"
    ROLE_DENIED = "role_denied"
    RESOURCE_NOT_FOUND = "resource_not_found"
    REVISION_CONFLICT = "revision_conflict"
    STORAGE_CONFLICT = "storage_conflict"
    STORAGE_VERSION_UNSUPPORTED = "storage_version_unsupported"
    IDEMPOTENCY_CONFLICT = "idempotency_conflict"
    INVALID_STATE = "invalid_state"
    TURN_QUEUE_FULL = "turn_queue_full"
    TURN_NOT_QUEUED = "turn_not_queued"
    APPROVAL_NOT_PENDING = "approval_not_pending"
    BUDGET_EXCEEDED = "budget_exceeded"
    HELD = "held"
    CONFIRMATION_REQUIRED = "confirmation_required"
    PREVIEW_EXPIRED = "preview_expired"
    PREVIEW_MISMATCH = "preview_mismatch"
    PROOF_SPENT = "proof_spent"
    INVALID_CURSOR = "invalid_cursor"
    CURSOR_RESET_REQUIRED = "cursor_reset_required"
    SATURATED = "saturated"
    OVERLOADED = "overloaded"
    DEADLINE_EXCEEDED = "deadline_exceeded"
    UNAVAILABLE = "unavailable"
    INTERNAL_ERROR = "internal_error"
    ROUTINE_SCHEDULE_INVALID = "routine_schedule_invalid"
    ROUTINE_INTERVAL_TOO_SHORT = "routine_interval_too_short"
    ROUTINE_LIMIT_REACHED = "routine_limit_reached"
    ROUTINE_NOT_ACTIVE = "routine_not_active"
    ROUTINE_BUSY = "routine_busy"
    CONNECTION_DISABLED = "connection_disabled"
    WEBHOOK_DESTINATION_REFUSED = "webhook_destination_refused"
    WEBHOOK_LIMIT_REACHED = "webhook_limit_reached"


@attrs.frozen
class ErrorCode:
    """One member of the closed error set."""

    code: str
    status: int
    retryable: bool
    summary: str


_CODES: tuple[ErrorCode, ...] = (
    # Input and protocol.
    ErrorCode("invalid_request", 400, False, "the request is malformed: {detail}"),
    ErrorCode("validation_failed", 400, False, "{path}: {detail}"),
    ErrorCode("unknown_method", 404, False, "no operation named {method}"),
    ErrorCode("protocol_incompatible", 426, False, "protocol {client} is not {node}"),
    ErrorCode("frame_too_large", 413, False, "a frame exceeds {limit} bytes"),
    ErrorCode("hello_required", 400, False, "the first request must be node.hello"),
    ErrorCode("command_not_implemented", 501, False, "{method} is registered but not served"),
    ErrorCode("configuration_invalid", 400, False, "configuration is invalid: {detail}"),
    # Authority.
    ErrorCode("unauthenticated", 401, False, "a valid bearer credential is required"),
    ErrorCode("role_denied", 403, False, "{role} may not call {method}"),
    # Resources and state.
    ErrorCode("resource_not_found", 404, False, "{resource} {id} does not exist"),
    ErrorCode("revision_conflict", 409, False, "{resource} {id} is at revision {actual}"),
    ErrorCode("storage_conflict", 409, False, "the change conflicts with stored state"),
    ErrorCode("storage_version_unsupported", 409, False, "schema {found} is newer than {known}"),
    ErrorCode("idempotency_conflict", 409, False, "command {commandId} was used with other input"),
    ErrorCode("invalid_state", 409, False, "{resource} {id} is {state}"),
    ErrorCode("turn_queue_full", 429, False, "session {sessionId} has {limit} pending turns"),
    ErrorCode("turn_not_queued", 409, False, "turn {turnId} already left the queue"),
    ErrorCode("approval_not_pending", 409, False, "approval {approvalId} is {state}"),
    ErrorCode("budget_exceeded", 429, False, "today's turns cost {spent} of {limit}"),
    ErrorCode("held", 409, False, "admission is held: {detail}"),
    # Previews and confirmations.
    ErrorCode("confirmation_required", 428, False, "{method} needs a preview and its proof"),
    ErrorCode("preview_expired", 410, False, "preview {previewId} expired"),
    ErrorCode("preview_mismatch", 409, False, "the input does not match preview {previewId}"),
    ErrorCode("proof_spent", 409, False, "the proof for preview {previewId} was already used"),
    # Cursors.
    ErrorCode("invalid_cursor", 400, False, "the cursor is not one this Node issued"),
    ErrorCode("cursor_reset_required", 410, False, "the cursor can no longer be served"),
    # Capacity and time.
    ErrorCode("saturated", 503, True, "the Node is at capacity: {detail}"),
    ErrorCode("overloaded", 503, True, "{target} is overloaded"),
    ErrorCode("deadline_exceeded", 504, True, "{method} did not finish within {ms} ms"),
    ErrorCode("unavailable", 503, True, "{target} is unavailable"),
    ErrorCode("internal_error", 500, False, "an internal error occurred"),
    # Routines.
    ErrorCode("routine_schedule_invalid", 400, False, "the schedule is invalid: {detail}"),
    ErrorCode("routine_interval_too_short", 400, False, "fires are under 15 minutes apart"),
    ErrorCode("routine_limit_reached", 409, False, "the Project has {limit} routines"),
    ErrorCode("routine_not_active", 409, False, "routine {routineId} is not active"),
    ErrorCode("routine_busy", 409, True, "routine {routineId} is busy"),
    ErrorCode("connection_disabled", 409, False, "connection {connectionId} is disabled"),
    # Webhooks.
    ErrorCode("webhook_destination_refused", 400, False, "the webhook URL is refused: {reason}"),
    ErrorCode("webhook_limit_reached", 409, False, "the Node has {limit} webhooks"),
)

ERROR_CODES: Mapping[str, ErrorCode] = {entry.code: entry for entry in _CODES}
# Each code is named once in the enum and described once in the table; a test checks both agree.


class MaiaError(Exception):
    """A failure with a code from the closed set, safe to send to a client.

    `details` holds JSON-safe values only (it travels on the wire as is).
    """

    def __init__(self, code: Code | str, message: str, details: Mapping[str, Any] | None = None):
        if code not in ERROR_CODES:
            raise ValueError(f"unknown error code {code!r}")  # our bug, not the caller's
        super().__init__(message)
        self.code = str(code)
        self.message = message
        self.details: dict[str, Any] = dict(details or {})

    @property
    def status(self) -> int:
        return ERROR_CODES[self.code].status

    @property
    def retryable(self) -> bool:
        return ERROR_CODES[self.code].retryable

    def to_wire(self) -> dict[str, Any]:
        """The error object of the API envelope."""
        return {
            "code": self.code,
            "message": self.message,
            "retryable": self.retryable,
            "details": self.details,
        }

    def __repr__(self) -> str:
        return f"MaiaError({self.code!r}, {self.message!r})"
