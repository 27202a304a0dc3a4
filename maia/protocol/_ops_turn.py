"""Turn operations (spec: Turn queue operations): send queues, wait/show read, the queue
lists, cancel takes the queued turn's own revision, interrupt stops a running turn.
"""

# ruff: noqa: RUF009  (field() returns attrs.field: a field definition, not a shared default)

from __future__ import annotations

from typing import Literal

import attrs

from maia.core._fields import field
from maia.core._limits import (
    INPUT_PREVIEW_MAX_BYTES,
    MAX_ITEM_TEXT_LENGTH,
    MAX_SESSION_PENDING_TURNS,
    MAX_TURN_ITEMS,
    MAX_TURN_TEXT_LENGTH,
    PAGE_LIMIT_DEFAULT,
    PAGE_LIMIT_MAX,
    WAIT_MILLISECONDS_MAX,
)

from ._common import (
    TURN_STATES,
    Delivery,
    ItemKind,
    Turn,
    TurnState,
    command_id_field,
    count_field,
    cursor_field,
    id_field,
    mutation,
    operation,
    revision_field,
    timestamp_field,
    wait_milliseconds_field,
)


@attrs.frozen
class TurnSendInput:
    """Queue a prompt on a Session; its worker starts if none runs. With waitMilliseconds,
    answer only once the turn ended or that wait passed (the send and its wait in one call)."""

    command_id: str = command_id_field()
    session_id: str = id_field("The Session.")
    text: str = field(doc="The prompt.", min_length=1, max_length=MAX_TURN_TEXT_LENGTH)
    wait_milliseconds: int | None = field(
        doc="After queueing, wait up to this long (0-4000) for the turn to end before"
        " answering; absent: answer once queued. Not part of the command: a retry with"
        " another wait is the same command.",
        default=None,
        minimum=0,
        maximum=WAIT_MILLISECONDS_MAX,
    )


@attrs.frozen
class TurnResult:
    """A turn changed by a mutation, how the command was delivered and its receipt."""

    delivery: Delivery = field(doc="new, or duplicate for a retried commandId.")
    receipt_id: str = id_field("The command's receipt.")
    turn: Turn = field(doc="The turn after the change.")


@attrs.frozen
class TurnWaitInput:
    """Wait (at most 4 s a call) for a turn to reach one of the states (default: it ends)."""

    turn_id: str = id_field("The turn.")
    states: tuple[TurnState, ...] = field(
        doc="States that satisfy the wait (default: completed, failed, interrupted).",
        factory=tuple,
        min_items=1,
        max_items=len(TURN_STATES),
    )
    wait_milliseconds: int = wait_milliseconds_field()


@attrs.frozen
class TurnWaitOutput:
    """Whether the wait was satisfied, and the turn as it is now."""

    method: Literal["turn.wait"] = field(doc="Always turn.wait.")
    satisfied: bool = field(doc="False when the wait ended first.")
    turn: Turn = field(doc="The turn now.")


@attrs.frozen
class TurnRef:
    """Names one turn."""

    turn_id: str = id_field("The turn.")


@attrs.frozen
class TurnShowInput:
    """Names one turn and, to read on, the page of its items to start from."""

    turn_id: str = id_field("The turn.")
    item_cursor: str | None = cursor_field(
        "The previous page's nextItemCursor: list the items after it (absent: from the first)."
    )


@attrs.frozen
class TurnItem:
    """One item a worker produced in a turn, with its text assembled from the deltas."""

    item_id: str = id_field("The item.")
    kind: ItemKind = field(doc="What the item is.")
    state: Literal["started", "completed"] = field(doc="Open or finished.")
    sequence: int = count_field("Order within the turn.")
    text: str = field(doc="Assembled text.", max_length=MAX_ITEM_TEXT_LENGTH)
    data: object = field(
        doc="Kind-specific extension (namespaced keys).", default=None, opaque="item extension"
    )
    truncated: bool = field(
        doc="True when `text` is only the item's start: it passed the 262,144-character item"
        " bound (the rest is in `artifactPath`), or was cut to keep the response under 1 MiB.",
        default=False,
    )
    artifact_path: str | None = field(
        doc="The artifact file (in the Node's home, content-addressed) holding the text past"
        " the item bound.",
        default=None,
        max_length=4096,
    )


@attrs.frozen
class TurnSendOutput:
    """The queued turn and its place: 0 is the running turn's place. With waitMilliseconds:
    the turn as the wait left it and, once it ended, its items (turn.show's first page)."""

    delivery: Delivery = field(doc="new, or duplicate for a retried commandId.")
    receipt_id: str = id_field("The command's receipt.")
    turn: Turn = field(
        doc="The queued turn; with waitMilliseconds, the turn when the wait ended (its state"
        " says whether it ended)."
    )
    position: int = count_field(
        "Place in the Session's queue when it was queued.", maximum=MAX_SESSION_PENDING_TURNS - 1
    )
    items: tuple[TurnItem, ...] | None = field(
        doc="With waitMilliseconds and an ended turn: its items in order, as turn.show lists"
        " them (absent otherwise).",
        default=None,
        max_items=MAX_TURN_ITEMS,
    )
    items_truncated: bool = field(
        doc="True when more items exist than are listed (turn.show with nextItemCursor has"
        " the rest).",
        default=False,
    )
    next_item_cursor: str | None = field(
        doc="With itemsTruncated: pass as turn.show's itemCursor to list the items after these.",
        default=None,
        max_length=1024,
    )


@attrs.frozen
class TurnShowOutput:
    """A turn, its failure reason if any, and its items."""

    turn: Turn = field(doc="The turn.")
    items: tuple[TurnItem, ...] = field(doc="Its items in order.", max_items=MAX_TURN_ITEMS)
    items_truncated: bool = field(doc="True when more items exist than are listed.", default=False)
    next_item_cursor: str | None = field(
        doc="With itemsTruncated: pass as itemCursor to list the items after these (every"
        " page stays under the 1 MiB frame); null on the last page.",
        default=None,
        max_length=1024,
    )
    prompt: str | None = field(
        doc="The whole prompt (the turn carries only its start).",
        default=None,
        max_length=MAX_TURN_TEXT_LENGTH,
    )


@attrs.frozen
class TurnListInput:
    """A Session's turns, newest first, a page at a time."""

    session_id: str = id_field("The Session.")
    limit: int = field(
        doc="Page size.", default=PAGE_LIMIT_DEFAULT, minimum=1, maximum=PAGE_LIMIT_MAX
    )
    cursor: str | None = cursor_field()


@attrs.frozen
class TurnListOutput:
    """One page of a Session's turns, newest first (without their output: `turn.show`)."""

    turns: tuple[Turn, ...] = field(doc="The page.", max_items=PAGE_LIMIT_MAX)
    next_cursor: str | None = field(doc="Cursor of the next page; null on the last.")


@attrs.frozen
class SessionRefInput:
    """Names one Session."""

    session_id: str = id_field("The Session.")


@attrs.frozen
class QueueEntry:
    """A pending turn: its place, its own revision and the start of its text."""

    turn_id: str = id_field("The turn.")
    state: TurnState = field(doc="queued, dispatching or running.")
    position: int = count_field("0 for the active turn, then dispatch order.")
    revision: int = revision_field("The turn's own revision (turn.cancel takes it).")
    input_preview: str = field(
        doc="Start of the prompt.", max_length=INPUT_PREVIEW_MAX_BYTES, length_unit="utf8-bytes"
    )
    created_at: str = timestamp_field("When it was sent.")


QueueWaitLimit = Literal["maxConcurrentActivations", "maxLiveSessions"]


@attrs.frozen
class QueueWait:
    """Why the queue's first turn does not dispatch yet: a capacity limit is reached."""

    limit: QueueWaitLimit = field(doc="The CapacityLimitsV1 limit that holds it.")
    scope: Literal["node", "project"] = field(
        doc="node (the user's limit, over every Project) or project (the Project's own)."
    )
    value: int = field(doc="The limit's value now.", minimum=1)


@attrs.frozen
class TurnQueueListOutput:
    """The dispatching or running turn, then the queue in dispatch order."""

    session_id: str = id_field("The Session.")
    active_turn: QueueEntry | None = field(doc="The dispatching or running turn.")
    queue: tuple[QueueEntry, ...] = field(
        doc="Queued turns in dispatch order.", max_items=MAX_SESSION_PENDING_TURNS
    )
    limit: int = field(doc="Pending turns a Session may hold, the running one included.", minimum=1)
    waiting: QueueWait | None = field(
        doc="Why the first queued turn waits (absent: it is not held by a limit); it "
        "dispatches, in fair order across Sessions, when capacity frees.",
        default=None,
    )


@attrs.frozen
class TurnCancelInput:
    """Cancel a queued turn; it then reads failed with reason turn_rejected."""

    command_id: str = command_id_field()
    turn_id: str = id_field("The queued turn.")
    expected_revision: int = revision_field("The turn's own revision (from turn.queue.list).")


@attrs.frozen
class TurnInterruptInput:
    """Interrupt a running turn (interrupt frame, bounded)."""

    command_id: str = command_id_field()
    turn_id: str = id_field("The running turn.")
    expected_revision: int | None = revision_field("The turn's own revision.", default=None)


TURN_OPERATIONS = (
    mutation(
        operation_id="turn.send",
        agent_exposure="eligible",
        summary="Queue a prompt on a Session (at most 8 pending); optionally wait for its end.",
        input_type=TurnSendInput,
        output_type=TurnSendOutput,
        errors=(
            "resource_not_found",
            "invalid_state",
            "turn_queue_full",
            "saturated",
            "budget_exceeded",
        ),
        event_types=("turn.queued", "session.starting", "session.running", "turn.dispatching"),
        effect_class="native-reconcilable",
    ),
    operation(
        operation_id="turn.wait",
        agent_exposure="eligible",
        summary="Wait up to 4 s for a turn to end (or reach given states).",
        input_type=TurnWaitInput,
        output_type=TurnWaitOutput,
        errors=("resource_not_found",),
    ),
    operation(
        operation_id="turn.show",
        agent_exposure="eligible",
        summary="Show a turn, its failure reason and its items (paged: nextItemCursor).",
        input_type=TurnShowInput,
        output_type=TurnShowOutput,
        errors=("resource_not_found", "invalid_cursor", "cursor_reset_required"),
    ),
    operation(
        operation_id="turn.list",
        agent_exposure="eligible",
        summary="List a Session's turns, newest first, paged.",
        input_type=TurnListInput,
        output_type=TurnListOutput,
        errors=("resource_not_found", "invalid_cursor", "cursor_reset_required"),
    ),
    operation(
        operation_id="turn.queue.list",
        agent_exposure="eligible",
        summary="The active turn and the queue of a Session.",
        input_type=SessionRefInput,
        output_type=TurnQueueListOutput,
        errors=("resource_not_found",),
    ),
    mutation(
        operation_id="turn.cancel",
        agent_exposure="eligible",
        summary="Cancel a queued turn by its own revision.",
        input_type=TurnCancelInput,
        output_type=TurnResult,
        errors=("resource_not_found", "revision_conflict", "turn_not_queued"),
        revision_fields=("expectedRevision",),
        event_types=("turn.failed",),
    ),
    mutation(
        operation_id="turn.interrupt",
        agent_exposure="eligible",
        summary="Interrupt a running turn.",
        input_type=TurnInterruptInput,
        output_type=TurnResult,
        errors=("resource_not_found", "revision_conflict", "invalid_state"),
        revision_fields=("expectedRevision",),
        event_types=("turn.interrupt_requested", "turn.failed"),
        effect_class="native-reconcilable",
    ),
)
