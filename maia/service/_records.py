"""receipt.get, receipt.list and events.read: what happened, as stored.

Receipts list oldest first by insertion (the cursor is the last row seen). The journal is
read from its start, after a signed cursor, after one event, or from one owner's sequence;
each page returns the cursor to continue from, bound to the filter it was read with.

events.read answers a cursor it cannot serve as a result, not an error (spec: its result is
a page, a cursor_reset_required or an invalid_cursor, each with status): a cursor behind the
pruned horizon, expired, or from an earlier Node run gets `cursor_reset_required` with a
fresh snapshot descriptor (a cursor at the oldest retained event, the journal's bounds); one
this Node did not issue for this read gets `invalid_cursor`. A page read where a prune left
a hole carries `oldestRetainedCursor`.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from maia.core._limits import EVENTS_LIMIT_MAX
from maia.protocol import (
    REGISTRY,
    Event,
    EventsReadInput,
    EventsReadOutput,
    EventsSnapshot,
    FromCursor,
    FromEvent,
    FromSequence,
    MaiaError,
    Receipt,
    ReceiptGetInput,
    ReceiptGetOutput,
    ReceiptListInput,
    ReceiptListOutput,
    check,
    format_timestamp_ms,
    parse_timestamp,
)
from storage import (
    EventRecord,
    event_position,
    find_receipt,
    get_receipt,
    list_receipts,
    oldest_retained_position,
    read_events,
    read_owner_events,
)
from storage import Receipt as StoredReceipt

from ._context import LOCAL_ACTOR, ServiceContext, not_found
from ._event_types import check_filter_types
from ._page_bytes import event_bytes, fitting, receipt_bytes
from ._paging import issue, open_cursor, peek_scope

JOURNAL = "journal"


def _receipt(stored: StoredReceipt) -> Receipt:
    return check(Receipt, stored.to_wire(), root="receipt")


def _by_command(conn: sqlite3.Connection, command_id: str,
                operation_id: str | None) -> StoredReceipt:  # fmt: skip
    """The receipt of `command_id` (of `operation_id` when given). Raises
    `resource_not_found`; `validation_failed` (path operationId) when several operations
    used the commandId and none is named: the idempotency key includes the operation."""
    if operation_id is None:
        operations = [row[0] for row in conn.execute(
            "SELECT DISTINCT operation_id FROM receipts WHERE command_id = ? AND actor_id = ?"
            " ORDER BY operation_id", (command_id, LOCAL_ACTOR))]  # fmt: skip
        if len(operations) > 1:
            raise MaiaError(
                "validation_failed",
                f"operationId: commandId {command_id} names receipts of {len(operations)} "
                f"operations ({', '.join(operations)}): name one",
                {"path": "operationId", "detail": "required", "operations": operations},
            )
        operation_id = operations[0] if operations else None
    found = None
    if operation_id is not None:
        found = find_receipt(conn, actor_id=LOCAL_ACTOR, operation_id=operation_id,
                             command_id=command_id)  # fmt: skip
    if found is None:
        raise not_found("receipt", command_id)
    return found


async def receipt_get(ctx: ServiceContext, params: ReceiptGetInput) -> ReceiptGetOutput:
    """Raises `resource_not_found`, `validation_failed` (a commandId of several ops, an
    operationId that records no receipts)."""
    if params.operation_id is not None:
        _check_receipt_operation(params.operation_id)
    if params.receipt_id is not None:
        receipt_id = params.receipt_id
        stored = await ctx.read(lambda c: get_receipt(c, receipt_id))
    else:
        command_id = params.command_id or ""
        stored = await ctx.read(lambda c: _by_command(c, command_id, params.operation_id))
    return ReceiptGetOutput(receipt=_receipt(stored), correlation_id=stored.correlation)


def _check_receipt_operation(operation_id: str) -> None:
    """Raises `validation_failed` unless `operation_id` (or its deprecated alias) names an
    op that records receipts: another would only ever list nothing."""
    op, _ = REGISTRY.resolve(operation_id)
    if op is None or not op.receipt:
        why = "no such operation" if op is None else "the operation records no receipts"
        raise MaiaError(
            "validation_failed",
            f"operationId: {why} ({operation_id})",
            {"path": "operationId", "detail": why},
        )


async def receipt_list(ctx: ServiceContext, params: ReceiptListInput) -> ReceiptListOutput:
    """Raises `invalid_cursor`, `cursor_reset_required`, `validation_failed` (times, an
    operationId that records no receipts)."""
    if params.operation_id is not None:
        _check_receipt_operation(params.operation_id)
    filters = {
        "operationId": params.operation_id,
        "targetId": params.target_id,
        "since": params.since,
        "until": params.until,
    }
    after = 0
    if params.cursor is not None:
        after = open_cursor(ctx.store, params.cursor, "receipt.list", filters)
    since = parse_timestamp(params.since, "since") if params.since else None
    until = parse_timestamp(params.until, "until") if params.until else None
    rows = await ctx.read(
        lambda c: list_receipts(
            c, operation_id=params.operation_id, target_id=params.target_id, since_ms=since,
            until_ms=until, after_sequence=after, limit=params.limit + 1,
        )
    )  # fmt: skip
    page = rows[: params.limit]
    receipts = tuple(_receipt(r) for r in page)
    kept = fitting(receipts, receipt_bytes)  # the rest would pass the 1 MiB frame
    cursor = None
    if len(rows) > params.limit or kept < len(page):
        receipts, page = receipts[:kept], page[:kept]
        cursor = issue(ctx.store, page[-1].sequence, "receipt.list", filters)
    return ReceiptListOutput(receipts=receipts, next_cursor=cursor)


def _event(record: EventRecord) -> Event:
    payload: Any = record.payload
    turn_id = payload.get("turnId") if isinstance(payload, dict) else None
    return Event(
        schema_version="maia.event.v1",
        event_id=record.event_id,
        event_type=record.event_type,
        owner_type=record.owner_type,
        owner_id=record.owner_id,
        owner_sequence=record.owner_sequence,
        journal_position=record.position,
        classification=record.classification,  # type: ignore[arg-type]
        occurred_at=format_timestamp_ms(record.occurred_ms),
        payload=payload,
        causation_id=record.causation_id,
        correlation_id=record.correlation_id,
        aggregate_revision=record.aggregate_revision,
        project_id=record.project_id,
        session_id=record.session_id,
        turn_id=turn_id if isinstance(turn_id, str) else None,
        actor_id=record.actor_id,
        attempt_id=record.attempt_id,
        activation_id=record.activation_id,
        command_id=record.command_id,
    )


class _Unserved(Exception):
    """The position asked for cannot be served: answered as a result, not an error."""

    def __init__(self, error: MaiaError, scope: str, horizon: int, head: int) -> None:
        super().__init__(error.message)
        self.error, self.scope, self.horizon, self.head = error, scope, horizon, head


def _head(conn: sqlite3.Connection) -> int:
    return int(conn.execute("SELECT coalesce(max(position), 0) FROM events").fetchone()[0])


def _has_hole(conn: sqlite3.Connection, horizon: int, owner: str | None) -> bool:
    """Whether a prune removed events this read's scope would have held."""
    if horizon <= 1:
        return False
    if owner is None:
        return True
    row = conn.execute("SELECT 1 FROM pruned_owner_heads WHERE owner_id = ?", (owner,)).fetchone()
    return row is not None


def _read(ctx: ServiceContext, params: EventsReadInput, conn: sqlite3.Connection) -> Any:
    types = list(params.event_types)
    horizon = oldest_retained_position(conn)
    position = params.position
    owner: str | None = None
    if isinstance(position, FromSequence):
        owner = position.owner_id
        try:
            records = read_owner_events(conn, owner, after_sequence=position.after_sequence,
                                        limit=params.limit)  # fmt: skip
        except MaiaError as error:
            if error.code != "cursor_reset_required":
                raise
            raise _Unserved(error, f"owner:{owner}", horizon, _head(conn)) from None
        if records and records[0].owner_type != position.owner_type:
            # An owner has one type: another one names no owner (and the page's cursor,
            # scoped by owner ID, would read the other owner's events after all).
            raise MaiaError(
                "validation_failed",
                f"position.ownerType: {owner} is a {records[0].owner_type}, "
                f"not a {position.owner_type}",
                {"path": "position.ownerType", "ownerType": records[0].owner_type},
            )
        after = records[-1].position if records else None
        if after is None:  # nothing yet: continue after the journal's end
            after = _head(conn)
        events = tuple(r for r in records if not types or r.event_type in types)
        hole = _has_hole(conn, horizon, owner)
        return events, after, owner, len(records) == params.limit, horizon, hole
    if isinstance(position, FromCursor):
        scope = peek_scope(position.cursor)
        owner = scope[len("owner:") :] if scope.startswith("owner:") else None
        try:
            after = open_cursor(ctx.store, position.cursor, scope, types, oldest_retained=horizon)
        except MaiaError as error:
            if error.code != "cursor_reset_required":
                raise
            raise _Unserved(error, scope, horizon, _head(conn)) from None
    elif isinstance(position, FromEvent):
        found = event_position(conn, position.event_id)
        if found is None:
            raise not_found("event", position.event_id)
        after = found
    else:
        after = horizon - 1
    page = read_events(conn, after_position=after, limit=params.limit, owner_id=owner,
                       event_types=types or None)  # fmt: skip
    more = len(page.events) == params.limit
    return page.events, page.last_position, owner, more, horizon, _has_hole(conn, horizon, owner)


async def events_read(ctx: ServiceContext, params: EventsReadInput) -> EventsReadOutput:
    """A page, or a `cursor_reset_required` / `invalid_cursor` result for a cursor that
    cannot be served. Raises `resource_not_found` (event), `validation_failed` (an event
    type no Node emits: the filter would match nothing)."""
    types = list(params.event_types)
    check_filter_types("eventTypes", types)
    try:
        events, last, owner, more, horizon, hole = await ctx.read(lambda c: _read(ctx, params, c))
    except _Unserved as unserved:
        snapshot = EventsSnapshot(
            cursor=issue(ctx.store, unserved.horizon - 1, unserved.scope, types),
            oldest_retained_position=unserved.horizon,
            head_position=unserved.head,
            page_limit=EVENTS_LIMIT_MAX,
            generated_at=format_timestamp_ms(ctx.now()),
        )
        reason = str(unserved.error.details.get("reason") or unserved.error.message)[:256]
        return EventsReadOutput(status="cursor_reset_required", reason=reason, snapshot=snapshot)
    except MaiaError as error:
        if error.code != "invalid_cursor":
            raise
        return EventsReadOutput(status="invalid_cursor", reason=error.message[:256])
    kept = fitting(events, event_bytes)
    if kept < len(events):  # the rest would pass the 1 MiB frame: on the next page
        events, last, more = events[:kept], events[kept - 1].position, True
    scope = f"owner:{owner}" if owner is not None else JOURNAL
    cursor = issue(ctx.store, last, scope, types)
    oldest = issue(ctx.store, horizon - 1, scope, types) if hole else None
    return EventsReadOutput(
        status="page",
        events=tuple(_event(e) for e in events),
        next_cursor=cursor,
        has_more=more,
        oldest_retained_cursor=oldest,
    )
