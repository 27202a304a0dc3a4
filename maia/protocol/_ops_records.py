"""Operations that read what happened: receipts, the event journal, and session.attach
(spec: Mutation, preview, confirmation, and receipt; Events, traces, and cursors).
"""

# ruff: noqa: RUF009  (field() returns attrs.field: a field definition, not a shared default)

from __future__ import annotations

from typing import Any, ClassVar, Literal

import attrs

from maia.core._fields import field, spec
from maia.core._limits import (
    EVENTS_LIMIT_MAX,
    MAX_CURSOR_LENGTH,
    MAX_ITEM_TEXT_LENGTH,
    PAGE_LIMIT_DEFAULT,
    PAGE_LIMIT_MAX,
    STREAM_BATCH_MAX_RECORDS,
)

from ._common import (
    OPERATION_ID_PATTERN,
    ItemKind,
    TurnState,
    count_field,
    cursor_field,
    digest_field,
    id_field,
    operation,
    revision_field,
    timestamp_field,
)
from ._registry import SCHEMA_BASE, StreamDescriptor

_ID_LIST = spec(min_length=1, max_length=128, pattern=r"^[A-Za-z0-9][A-Za-z0-9._:-]*$")
_TYPE = spec(min_length=1, max_length=64, pattern=r"^[a-z][a-z0-9_.-]*$")


@attrs.frozen
class ReceiptTarget:
    """An aggregate a command touched, with its revisions before and after."""

    target_type: str = field(doc="session, turn, project, ...", min_length=1, max_length=64)
    target_id: str = id_field("The aggregate.")
    disposition: str = field(doc="What happened to it.", min_length=1, max_length=64)
    prior_revision: int | None = revision_field("Revision before.", default=None)
    result_revision: int | None = revision_field("Revision after.", default=None)


@attrs.frozen
class Receipt:
    """What a command did (OperationReceiptV1)."""

    schema_version: Literal["maia.receipt.v1"] = field(doc="Receipt schema.")
    receipt_id: str = id_field("The receipt.")
    command_id: str = id_field("The command's idempotency key.")
    operation_id: str = field(doc="The operation.", pattern=OPERATION_ID_PATTERN, max_length=128)
    actor_id: str = id_field("Who asked.")
    normalized_input_digest: str = digest_field("Digest of the normalized input.")
    outcome: Literal["applied", "rejected", "reconciled", "outcome-unknown"] = field(doc="Outcome.")
    targets: tuple[ReceiptTarget, ...] = field(doc="Aggregates touched.", max_items=64)
    event_ids: tuple[str, ...] = field(doc="Events it emitted.", max_items=256, items=_ID_LIST)
    effect_ids: tuple[str, ...] = field(doc="Effects it started.", max_items=256, items=_ID_LIST)
    evidence_digest: str = digest_field("Digest of the stored result.")
    created_at: str = timestamp_field("When it was recorded.")
    project_id: str | None = id_field("The Project, when there is one.", default=None)


def _one_key(value: ReceiptGetInput) -> tuple[str, str] | None:
    if (value.receipt_id is None) == (value.command_id is None):
        return ("receiptId", "give exactly one of receiptId and commandId")
    if value.operation_id is not None and value.command_id is None:
        return ("operationId", "only with commandId")
    return None


@attrs.frozen
class ReceiptGetInput:
    """A receipt by its ID, or by the commandId of the command that made it (and its
    operationId when several operations used that commandId)."""

    __maia_refine__: ClassVar[Any] = staticmethod(_one_key)
    __maia_schema__: ClassVar[dict[str, Any]] = {
        "oneOf": [
            {
                "required": ["receiptId"],
                "not": {"anyOf": [{"required": ["commandId"]}, {"required": ["operationId"]}]},
            },
            {"required": ["commandId"], "not": {"required": ["receiptId"]}},
        ]
    }

    receipt_id: str | None = id_field("The receipt.", default=None)
    command_id: str | None = id_field("The command's idempotency key.", default=None)
    operation_id: str | None = field(
        doc="With commandId: the operation that used it (needed when several did: the "
        "idempotency key is actor, operation and commandId).",
        default=None,
        pattern=OPERATION_ID_PATTERN,
        max_length=128,
    )


@attrs.frozen
class ReceiptGetOutput:
    """One receipt, the correlation its command's events carry, and eventsPruned when
    retention removed some of its events."""

    receipt: Receipt = field(doc="The receipt.")
    correlation_id: str = id_field(
        "The correlationId of every event the command caused (its commandId unless the "
        "command was part of a larger one)."
    )
    events_pruned: bool | None = field(
        doc="Present and true when a prune left a hole.", default=None
    )


@attrs.frozen
class ReceiptListInput:
    """Filter and page receipts, newest first."""

    operation_id: str | None = field(
        doc="Only this operation's receipts.",
        default=None,
        pattern=OPERATION_ID_PATTERN,
        max_length=128,
    )
    target_id: str | None = id_field("Only receipts touching this aggregate.", default=None)
    since: str | None = timestamp_field("Created at or after.", default=None)
    until: str | None = timestamp_field("Created before.", default=None)
    limit: int = field(
        doc="Page size.", default=PAGE_LIMIT_DEFAULT, minimum=1, maximum=PAGE_LIMIT_MAX
    )
    cursor: str | None = cursor_field()


@attrs.frozen
class ReceiptListOutput:
    """One page of receipts."""

    receipts: tuple[Receipt, ...] = field(doc="The page.", max_items=PAGE_LIMIT_MAX)
    next_cursor: str | None = field(doc="Next page; null on the last.")


@attrs.frozen
class FromStart:
    """From the oldest retained event."""

    kind: Literal["start"] = field(doc="start")


@attrs.frozen
class FromCursor:
    """After a signed cursor a previous page returned."""

    kind: Literal["cursor"] = field(doc="cursor")
    cursor: str = field(doc="Opaque signed cursor.", min_length=1, max_length=MAX_CURSOR_LENGTH)


@attrs.frozen
class FromEvent:
    """After one event, by ID."""

    kind: Literal["event"] = field(doc="event")
    event_id: str = id_field("The event.")


@attrs.frozen
class FromSequence:
    """One owner's events after an owner sequence."""

    kind: Literal["sequence"] = field(doc="sequence")
    owner_type: str = field(doc="session, turn, project, ...", min_length=1, max_length=64)
    owner_id: str = id_field("The owner.")
    after_sequence: int = count_field("Last owner sequence already seen (0: from the first).")


@attrs.frozen
class EventsReadInput:
    """Read the journal from a position; each page returns the cursor of the next."""

    position: FromStart | FromCursor | FromEvent | FromSequence = field(doc="Where to start.")
    event_types: tuple[str, ...] = field(
        doc="Only these event types (empty: all).", factory=tuple, max_items=32, items=_TYPE
    )
    limit: int = field(
        doc="Page size.", default=PAGE_LIMIT_MAX, minimum=1, maximum=EVENTS_LIMIT_MAX
    )


@attrs.frozen
class Event:
    """A durable event as the journal keeps it (the spec's EventV1 envelope)."""

    schema_version: Literal["maia.event.v1"] = field(doc="Event schema.")
    event_id: str = id_field("The event.")
    event_type: str = field(doc="What happened.", min_length=1, max_length=64)
    owner_type: str = field(doc="Owning aggregate type.", min_length=1, max_length=64)
    owner_id: str = id_field("Owning aggregate.")
    owner_sequence: int = field(doc="Gap-free per owner.", minimum=1)
    journal_position: int = field(doc="Global journal position.", minimum=1)
    classification: Literal["public", "operator", "project", "sensitive"] = field(
        doc="Who may see it."
    )
    occurred_at: str = timestamp_field("When.")
    payload: object = field(doc="Event-specific data.", opaque="event payload")
    causation_id: str = id_field(
        "What caused it: the command, the turn's dispatch (worker events), or the event "
        "itself (a root)."
    )
    correlation_id: str = id_field(
        "The command (or root event) it descends from: every event a command causes has it."
    )
    aggregate_revision: int | None = revision_field("Owner revision after.", default=None)
    project_id: str | None = id_field("Project.", default=None)
    session_id: str | None = id_field("Session.", default=None)
    turn_id: str | None = id_field("Turn.", default=None)
    actor_id: str | None = id_field("The client actor whose command it records.", default=None)
    attempt_id: str | None = id_field("The worker attempt it came from.", default=None)
    activation_id: str | None = id_field(
        "The activation (one dispatch of a turn) it belongs to.", default=None
    )
    command_id: str | None = id_field("Command.", default=None)
    receipt_id: str | None = id_field("Receipt.", default=None)


@attrs.frozen
class EventsSnapshot:
    """Where to start again after `cursor_reset_required`: a fresh cursor at the oldest
    retained event and the bounds of what the journal holds now."""

    cursor: str = field(
        doc="Read from here (the oldest retained event).",
        min_length=1,
        max_length=MAX_CURSOR_LENGTH,
    )
    oldest_retained_position: int = field(doc="First journal position kept.", minimum=1)
    head_position: int = count_field("Last journal position written (0: none yet).")
    page_limit: int = field(
        doc="Most events one read returns.", minimum=1, maximum=EVENTS_LIMIT_MAX
    )
    generated_at: str = timestamp_field("When this descriptor was made.")


_STATUS_FIELDS: dict[str, tuple[str, ...]] = {
    "page": ("nextCursor", "hasMore"),
    "cursor_reset_required": ("reason", "snapshot"),
    "invalid_cursor": ("reason",),
}


def _status_fields(value: EventsReadOutput) -> tuple[str, str] | None:
    present = {
        "nextCursor": value.next_cursor is not None,
        "hasMore": value.has_more is not None,
        "reason": value.reason is not None,
        "snapshot": value.snapshot is not None,
    }
    for name in _STATUS_FIELDS[value.status]:
        if not present[name]:
            return (name, f"a {value.status} result carries {name}")
    for name, there in present.items():
        if there and name not in _STATUS_FIELDS[value.status]:
            return (name, f"a {value.status} result has no {name}")
    return None


@attrs.frozen
class EventsReadOutput:
    """A page of events and the cursor to continue from; or, for a cursor that cannot be
    served, `cursor_reset_required` (with a fresh snapshot descriptor) or `invalid_cursor`."""

    __maia_refine__: ClassVar[Any] = staticmethod(_status_fields)
    __maia_schema__: ClassVar[dict[str, Any]] = {
        "oneOf": [
            {"properties": {"status": {"const": status}}, "required": list(required)}
            for status, required in _STATUS_FIELDS.items()
        ]
    }

    status: Literal["page", "cursor_reset_required", "invalid_cursor"] = field(
        doc="page; cursor_reset_required (expired, restarted or pruned: start again from "
        "snapshot); invalid_cursor (not a cursor this Node issued for this read)."
    )
    events: tuple[Event, ...] = field(
        doc="Events in journal order (a page; empty otherwise).",
        factory=tuple,
        max_items=EVENTS_LIMIT_MAX,
    )
    next_cursor: str | None = field(
        doc="Continue from here (page).", default=None, min_length=1, max_length=MAX_CURSOR_LENGTH
    )
    has_more: bool | None = field(doc="Whether more events were ready (page).", default=None)
    oldest_retained_cursor: str | None = field(
        doc="Present only when a prune left a hole: a cursor at the oldest retained event.",
        default=None,
        min_length=1,
        max_length=MAX_CURSOR_LENGTH,
    )
    reason: str | None = field(
        doc="Why the cursor was not served (reset, invalid).",
        default=None,
        min_length=1,
        max_length=256,
    )
    snapshot: EventsSnapshot | None = field(
        doc="Where to start again (cursor_reset_required).", default=None
    )


@attrs.frozen
class StreamCursor:
    """A position in one Session's stream."""

    epoch: int = field(doc="Node epoch.", minimum=1)
    sequence: int = count_field("Owner sequence already seen.")


@attrs.frozen
class SessionAttachInput:
    """Follow one Session; resume after `cursor` or start from a snapshot."""

    session_id: str = id_field("The Session.")
    cursor: StreamCursor | None = field(doc="Resume after this position.", default=None)


@attrs.frozen
class SessionStreamRecord:
    """One record of a Session's stream (maia.session-stream/v1)."""

    record: Literal[
        "turn.started", "item.started", "item.delta", "item.completed", "turn.completed"
    ] = field(doc="Record type.")
    session_id: str = id_field("The Session.")
    turn_id: str = id_field("The turn.")
    sequence: int = field(doc="Owner sequence.", minimum=1)
    node_epoch: int = field(doc="Node epoch.", minimum=1)
    item_id: str | None = id_field("The item (item records).", default=None)
    item_kind: ItemKind | None = field(doc="Item kind (item records).", default=None)
    text: str | None = field(
        doc="Delta or completed text.", default=None, max_length=MAX_ITEM_TEXT_LENGTH
    )
    turn_state: TurnState | None = field(doc="State (turn.completed).", default=None)


@attrs.frozen
class OpenItem:
    """An item still open at synchronization, with its text so far."""

    turn_id: str = id_field("The turn.")
    item_id: str = id_field("The item.")
    kind: ItemKind = field(doc="Item kind.")
    text: str = field(doc="Text so far.", max_length=MAX_ITEM_TEXT_LENGTH)


@attrs.frozen
class AttachedFrame:
    """First frame: how the stream starts."""

    type: Literal["attached"] = field(doc="attached")
    session_id: str = id_field("The Session.")
    mode: Literal["replay", "snapshot"] = field(doc="Replay from the cursor, or a snapshot.")
    position: StreamCursor = field(doc="Where the stream starts.")


@attrs.frozen
class RecordsFrame:
    """Up to 64 records in owner order."""

    type: Literal["records"] = field(doc="records")
    records: tuple[SessionStreamRecord, ...] = field(
        doc="Records.", min_items=1, max_items=STREAM_BATCH_MAX_RECORDS
    )


@attrs.frozen
class SynchronizedFrame:
    """Caught up: the position and each open item's text so far; live records follow."""

    type: Literal["synchronized"] = field(doc="synchronized")
    position: StreamCursor = field(doc="Current position.")
    open_items: tuple[OpenItem, ...] = field(doc="Open items.", max_items=STREAM_BATCH_MAX_RECORDS)


@attrs.frozen
class HeartbeatFrame:
    """Nothing new; the stream is alive."""

    type: Literal["heartbeat"] = field(doc="heartbeat")
    position: StreamCursor = field(doc="Current position.")


@attrs.frozen
class ResyncFrame:
    """Terminal: the cursor cannot be served; attach again without it."""

    type: Literal["resync"] = field(doc="resync")
    reason: str = field(doc="Why.", min_length=1, max_length=256)


@attrs.frozen
class SessionAttachOutput:
    """One frame of the session.attach stream (the stream ends with resync or an error)."""

    frame: AttachedFrame | RecordsFrame | SynchronizedFrame | HeartbeatFrame | ResyncFrame = field(
        doc="The frame."
    )


RECORD_OPERATIONS = (
    operation(
        operation_id="receipt.get",
        agent_exposure="eligible",
        summary="One receipt, by receiptId or commandId.",
        input_type=ReceiptGetInput,
        output_type=ReceiptGetOutput,
        errors=("resource_not_found",),
    ),
    operation(
        operation_id="receipt.list",
        agent_exposure="eligible",
        summary="Receipts filtered by operation, target and time.",
        input_type=ReceiptListInput,
        output_type=ReceiptListOutput,
        errors=("invalid_cursor", "cursor_reset_required"),
    ),
    operation(
        operation_id="events.read",
        agent_exposure="eligible",
        summary="A page of the event journal from a cursor, event or sequence.",
        input_type=EventsReadInput,
        output_type=EventsReadOutput,
        errors=("resource_not_found",),
    ),
    operation(
        operation_id="session.attach",
        agent_exposure="unsupported",
        summary="Follow one Session's turns and items live (observation socket).",
        input_type=SessionAttachInput,
        output_type=SessionAttachOutput,
        availability=("cli", "tui", "sdk"),
        errors=("resource_not_found", "cursor_reset_required", "invalid_cursor"),
        stream=StreamDescriptor(
            mode="snapshot-then-events",
            cursor_schema_ref=f"{SCHEMA_BASE}:session-stream-cursor",
            reset_schema_ref=f"{SCHEMA_BASE}:session-stream-resync",
        ),
    ),
)
